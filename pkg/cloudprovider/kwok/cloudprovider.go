package kwok

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
)

// Name is the provider's name.
const Name = "kwok"

// ProviderIDPrefix starts every providerID the provider hands out.
const ProviderIDPrefix = "kwok://"

// ImageID is the imageID of every kwok instance.
const ImageID = "kwok-fake-image"

// RepairTolerance is how long a Node may be not Ready before repair.
const RepairTolerance = 10 * time.Minute

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// CloudProvider fakes instances as Nodes on the cluster's API server.
type CloudProvider struct {
	kubeClient  client.Client
	clock       clock.WithTicker
	base        []*cloudprovider.InstanceType
	unavailable *UnavailableOfferings
	delay       time.Duration
	backoff     time.Duration

	mu           sync.Mutex
	insufficient sets.Set[cloudprovider.OfferingKey]
	pending      map[string]*pendingLaunch // by Node name
	// made names the Nodes this process created (or found created) for a
	// launch: a launch it finished is never resumed, whatever a lagging
	// cache shows (see resumeLaunches).
	made        sets.Set[string]
	derived     derivedTypes
	driftChecks []driftCheck
	closed      bool
	launches    sync.WaitGroup
}

// derivedTypes caches the instance types with unavailable offerings applied.
type derivedTypes struct {
	types      []*cloudprovider.InstanceType
	version    uint64
	validUntil time.Time
	valid      bool
}

// New builds the provider. kubeClient must read and write Nodes and read
// KWOKNodeClasses.
func New(kubeClient client.Client, opts ...Option) (*CloudProvider, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	types := o.instanceTypes
	if types == nil {
		var err error
		if types, err = LoadInstanceTypes(o.catalogPath, o.zones); err != nil {
			return nil, err
		}
	}
	c := &CloudProvider{
		kubeClient:   kubeClient,
		clock:        o.clock,
		base:         types,
		unavailable:  NewUnavailableOfferings(o.clock, o.unavailableTTL),
		delay:        o.registrationDelay,
		backoff:      o.retryBackoff,
		insufficient: sets.New(o.insufficient...),
		pending:      map[string]*pendingLaunch{},
		made:         sets.New[string](),
	}
	// Drift checks, in order; the first non-empty reason wins. Add checks
	// for new KWOKNodeClass fields here.
	c.driftChecks = []driftCheck{
		// The KWOKNodeClass spec changed since launch.
		c.nodeClassDrift,
	}
	return c, nil
}

// Name is "kwok".
func (c *CloudProvider) Name() string { return Name }

// GetSupportedNodeClasses returns KWOKNodeClass.
func (c *CloudProvider) GetSupportedNodeClasses() []cloudprovider.NodeClass {
	return []cloudprovider.NodeClass{&kwokv1alpha1.KWOKNodeClass{}}
}

// RepairPolicies replaces a Node whose Ready condition has been False or
// Unknown for ten minutes.
func (c *CloudProvider) RepairPolicies() []cloudprovider.RepairPolicy {
	return []cloudprovider.RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: RepairTolerance},
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, TolerationDuration: RepairTolerance},
	}
}

// UnavailableOfferings is the cache of offerings recently refused for
// insufficient capacity; GetInstanceTypes reports them unavailable.
func (c *CloudProvider) UnavailableOfferings() *UnavailableOfferings { return c.unavailable }

// SetInsufficientCapacity replaces the offerings Create refuses.
func (c *CloudProvider) SetInsufficientCapacity(offerings ...cloudprovider.OfferingKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.insufficient = sets.New(offerings...)
}

// GetInstanceTypes returns the catalog's types, the same for every
// NodePool, with offerings in the unavailable cache marked unavailable.
func (c *CloudProvider) GetInstanceTypes(context.Context, *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	return c.instanceTypes(), nil
}

func (c *CloudProvider) instanceTypes() []*cloudprovider.InstanceType {
	live, version, next := c.unavailable.snapshot()
	if len(live) == 0 {
		return c.base
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if c.derived.valid && c.derived.version == version && now.Before(c.derived.validUntil) {
		return c.derived.types
	}
	c.derived = derivedTypes{types: withUnavailable(c.base, live), version: version, validUntil: next, valid: true}
	return c.derived.types
}

// withUnavailable returns types with the live offerings unavailable;
// affected types are copied, the others shared.
func withUnavailable(types []*cloudprovider.InstanceType, live map[cloudprovider.OfferingKey]bool) []*cloudprovider.InstanceType {
	out := make([]*cloudprovider.InstanceType, len(types))
	for i, it := range types {
		out[i] = it
		affected := false
		for _, o := range it.Offerings {
			if o.Available && live[cloudprovider.KeyOf(it, o)] {
				affected = true
				break
			}
		}
		if !affected {
			continue
		}
		cp := *it
		cp.Requirements = it.Requirements.Copy()
		cp.Offerings = make([]*cloudprovider.Offering, len(it.Offerings))
		for j, o := range it.Offerings {
			oc := *o
			if live[cloudprovider.KeyOf(it, o)] {
				oc.Available = false
			}
			cp.Offerings[j] = &oc
		}
		cp.RefreshOfferingRequirements()
		out[i] = &cp
	}
	return out
}

// Close stops pending delayed launches and waits for them to return.
// Create fails afterwards.
func (c *CloudProvider) Close() {
	c.mu.Lock()
	c.closed = true
	for _, p := range c.pending {
		p.cancel()
	}
	c.mu.Unlock()
	c.launches.Wait()
}

func providerID(nodeName string) string { return ProviderIDPrefix + nodeName }

// nodeNameOf returns the Node name in a kwok providerID.
func nodeNameOf(providerID string) (string, error) {
	name, ok := strings.CutPrefix(providerID, ProviderIDPrefix)
	if !ok || name == "" {
		return "", cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("providerID %q is not a kwok providerID", providerID))
	}
	return name, nil
}
