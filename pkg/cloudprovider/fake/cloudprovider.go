package fake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
)

// ImageID is the imageID of every fake instance.
const ImageID = "fake-image"

// DefaultRepairPolicies replace a node whose Ready condition has been False
// or Unknown for 30 minutes.
var DefaultRepairPolicies = []cloudprovider.RepairPolicy{
	{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
	{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, TolerationDuration: 30 * time.Minute},
}

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// CloudProvider is the in-memory provider. The zero value is not usable;
// call New.
type CloudProvider struct {
	mu sync.Mutex

	instanceTypes       []*cloudprovider.InstanceType
	nodePoolTypes       map[string][]*cloudprovider.InstanceType
	nodePoolErrors      map[string]error
	insufficient        sets.Set[cloudprovider.OfferingKey]
	nextCreateErr       error
	nextGetErr          error
	nextDeleteErr       error
	allowedCreateCalls  int // negative: unlimited
	drifted             map[string]cloudprovider.DriftReason
	repairPolicies      []cloudprovider.RepairPolicy
	instances           map[string]*karpv1.NodeClaim // by providerID
	instanceByNodeClaim map[string]string            // nodeClaimKey → providerID

	createCalls []*karpv1.NodeClaim
	deleteCalls []*karpv1.NodeClaim
	getCalls    []string
}

// New returns a fake provider offering the given instance types, or
// DefaultInstanceTypes when none are given.
func New(instanceTypes ...*cloudprovider.InstanceType) *CloudProvider {
	if len(instanceTypes) == 0 {
		instanceTypes = DefaultInstanceTypes()
	}
	c := &CloudProvider{}
	c.reset(instanceTypes)
	return c
}

// Reset forgets every instance, recorded call and injected behaviour and
// offers instanceTypes (DefaultInstanceTypes when none).
func (c *CloudProvider) Reset(instanceTypes ...*cloudprovider.InstanceType) {
	if len(instanceTypes) == 0 {
		instanceTypes = DefaultInstanceTypes()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reset(instanceTypes)
}

func (c *CloudProvider) reset(instanceTypes []*cloudprovider.InstanceType) {
	c.instanceTypes = instanceTypes
	c.nodePoolTypes = map[string][]*cloudprovider.InstanceType{}
	c.nodePoolErrors = map[string]error{}
	c.insufficient = sets.New[cloudprovider.OfferingKey]()
	c.nextCreateErr, c.nextGetErr, c.nextDeleteErr = nil, nil, nil
	c.allowedCreateCalls = -1
	c.drifted = map[string]cloudprovider.DriftReason{}
	c.repairPolicies = slices.Clone(DefaultRepairPolicies)
	c.instances = map[string]*karpv1.NodeClaim{}
	c.instanceByNodeClaim = map[string]string{}
	c.createCalls, c.deleteCalls, c.getCalls = nil, nil, nil
}

// Name is "fake".
func (c *CloudProvider) Name() string { return "fake" }

// GetSupportedNodeClasses returns KWOKNodeClass, the NodeClass kind karp's
// test builders reference.
func (c *CloudProvider) GetSupportedNodeClasses() []cloudprovider.NodeClass {
	return []cloudprovider.NodeClass{&kwokv1alpha1.KWOKNodeClass{}}
}

// RepairPolicies returns the configured policies (DefaultRepairPolicies
// unless SetRepairPolicies changed them).
func (c *CloudProvider) RepairPolicies() []cloudprovider.RepairPolicy {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.repairPolicies)
}

// GetInstanceTypes returns the NodePool's own types when configured, else
// the provider-wide ones; a configured error for the NodePool wins.
func (c *CloudProvider) GetInstanceTypes(_ context.Context, nodePool *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.typesFor(nodePoolName(nodePool))
}

func (c *CloudProvider) typesFor(nodePool string) ([]*cloudprovider.InstanceType, error) {
	if err := c.nodePoolErrors[nodePool]; err != nil {
		return nil, err
	}
	if types, ok := c.nodePoolTypes[nodePool]; ok {
		return types, nil
	}
	return c.instanceTypes, nil
}

func nodePoolName(nodePool *karpv1.NodePool) string {
	if nodePool == nil {
		return ""
	}
	return nodePool.Name
}

// Create launches a fake instance for the NodeClaim; see the package doc.
func (c *CloudProvider) Create(_ context.Context, nodeClaim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.createCalls = append(c.createCalls, nodeClaim.DeepCopy())
	if err := c.nextCreateErr; err != nil {
		c.nextCreateErr = nil
		return nil, err
	}
	if id, ok := c.instanceByNodeClaim[nodeClaimKey(nodeClaim)]; ok {
		if existing, ok := c.instances[id]; ok {
			return existing.DeepCopy(), nil
		}
	}
	if c.allowedCreateCalls == 0 {
		return nil, fmt.Errorf("creating instance: %w", errAllowedCreates)
	}
	launch, err := c.choose(nodeClaim)
	if err != nil {
		return nil, err
	}
	if c.allowedCreateCalls > 0 {
		c.allowedCreateCalls--
	}
	created := c.hydrate(nodeClaim, launch)
	c.instances[created.Status.ProviderID] = created
	c.instanceByNodeClaim[nodeClaimKey(nodeClaim)] = created.Status.ProviderID
	return created.DeepCopy(), nil
}

// choose returns the best launch that is not refused for capacity.
func (c *CloudProvider) choose(nodeClaim *karpv1.NodeClaim) (cloudprovider.Launch, error) {
	types, err := c.typesFor(nodeClaim.Labels[karpv1.NodePoolLabelKey])
	if err != nil {
		return cloudprovider.Launch{}, fmt.Errorf("getting instance types: %w", err)
	}
	var refused []cloudprovider.OfferingKey
	for _, l := range cloudprovider.LaunchCandidates(types, nodeClaim, nil) {
		if c.insufficient.Has(l.Key()) {
			refused = append(refused, l.Key())
			continue
		}
		return l, nil
	}
	return cloudprovider.Launch{}, cloudprovider.NewInsufficientCapacityError(
		fmt.Errorf("no available offering satisfies nodeclaim %s", nodeClaim.Name), refused...)
}

func (c *CloudProvider) hydrate(nodeClaim *karpv1.NodeClaim, l cloudprovider.Launch) *karpv1.NodeClaim {
	out := nodeClaim.DeepCopy()
	out.Labels = cloudprovider.LaunchLabels(nodeClaim, l)
	out.Status.ProviderID = providerIDFor(nodeClaim.Name, func(id string) bool { _, ok := c.instances[id]; return ok })
	out.Status.ImageID = ImageID
	out.Status.Capacity = l.InstanceType.Capacity.DeepCopy()
	out.Status.Allocatable = l.InstanceType.Allocatable.DeepCopy()
	return out
}

// nodeClaimKey identifies a NodeClaim across retries: its UID when set,
// else its name.
func nodeClaimKey(nodeClaim *karpv1.NodeClaim) string {
	if nodeClaim.UID != "" {
		return "uid/" + string(nodeClaim.UID)
	}
	return "name/" + nodeClaim.Name
}

// Delete removes the instance; a second Delete reports NodeClaimNotFound.
func (c *CloudProvider) Delete(_ context.Context, nodeClaim *karpv1.NodeClaim) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deleteCalls = append(c.deleteCalls, nodeClaim.DeepCopy())
	if err := c.nextDeleteErr; err != nil {
		c.nextDeleteErr = nil
		return err
	}
	id := nodeClaim.Status.ProviderID
	if _, ok := c.instances[id]; !ok {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("no instance %q", id))
	}
	delete(c.instances, id)
	for key, v := range c.instanceByNodeClaim {
		if v == id {
			delete(c.instanceByNodeClaim, key)
		}
	}
	return nil
}

// Get returns the instance with the providerID.
func (c *CloudProvider) Get(_ context.Context, providerID string) (*karpv1.NodeClaim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.getCalls = append(c.getCalls, providerID)
	if err := c.nextGetErr; err != nil {
		c.nextGetErr = nil
		return nil, err
	}
	nc, ok := c.instances[providerID]
	if !ok {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("no instance %q", providerID))
	}
	return nc.DeepCopy(), nil
}

// List returns every instance, ordered by providerID.
func (c *CloudProvider) List(context.Context) ([]*karpv1.NodeClaim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*karpv1.NodeClaim, 0, len(c.instances))
	for _, nc := range c.instances {
		out = append(out, nc.DeepCopy())
	}
	slices.SortFunc(out, func(a, b *karpv1.NodeClaim) int {
		return strings.Compare(a.Status.ProviderID, b.Status.ProviderID)
	})
	return out, nil
}

// IsDrifted returns the reason SetDrifted recorded for the NodeClaim's
// providerID, empty otherwise.
func (c *CloudProvider) IsDrifted(_ context.Context, nodeClaim *karpv1.NodeClaim) (cloudprovider.DriftReason, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.drifted[nodeClaim.Status.ProviderID], nil
}

// errAllowedCreates is what Create returns once SetAllowedCreateCalls' budget is spent.
var errAllowedCreates = errors.New("the fake provider allows no more creates")
