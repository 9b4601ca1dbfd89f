package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	coremetrics "github.com/karp-autoscaler/karp/pkg/metrics"
)

func errorKind(err error) string {
	switch {
	case cloudprovider.IsNodeClaimNotFoundError(err):
		return coremetrics.ErrorNodeClaimNotFound
	case cloudprovider.IsInsufficientCapacityError(err):
		return coremetrics.ErrorInsufficientCapacity
	case cloudprovider.IsNodeClassNotReadyError(err):
		return coremetrics.ErrorNodeClassNotReady
	case cloudprovider.IsCreateError(err):
		return coremetrics.ErrorCreate
	default:
		return coremetrics.ErrorUnknown
	}
}

// CloudProvider decorates a provider with call durations, error counts and
// the offering price and availability gauges. It is a CloudProvider itself
// and adds no behaviour; optional capabilities of the wrapped provider
// (such as LifecycleHooks) are reached through Unwrap.
type CloudProvider struct {
	cloudprovider.CloudProvider

	// clock times the offering gauges' refresh (see publish).
	clock clock.PassiveClock
	mu    sync.Mutex
	// published is when each list of instance types (by identity) was
	// last exported.
	published map[listID]time.Time
}

// listID names a list of instance types by identity: providers return the
// same cached list until they refresh it.
type listID struct {
	first *cloudprovider.InstanceType
	n     int
}

// republishAfter is how long an instance type list already exported is not
// exported again. Every NodeClaim's drift check lists its NodePool's types,
// and exporting a catalog of thousands of offerings each time was a sixth of
// the controller's CPU during a scale-out; a provider that changes an
// offering in place shows it within this bound, well inside a scrape
// interval.
const republishAfter = 10 * time.Second

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// Decorate wraps cp with coremetrics.
func Decorate(cp cloudprovider.CloudProvider) *CloudProvider {
	return &CloudProvider{CloudProvider: cp, clock: clock.RealClock{}, published: map[listID]time.Time{}}
}

// WithClock times the offering gauges' refresh by clk instead of the real
// clock.
func (c *CloudProvider) WithClock(clk clock.PassiveClock) *CloudProvider {
	c.clock = clk
	return c
}

// Unwrap returns the decorated provider.
func (c *CloudProvider) Unwrap() cloudprovider.CloudProvider { return c.CloudProvider }

func (c *CloudProvider) observe(ctx context.Context, method string, start time.Time, err error) {
	labels := prometheus.Labels{coremetrics.ControllerLabel: coremetrics.ControllerFrom(ctx), coremetrics.MethodLabel: method, coremetrics.ProviderLabel: c.CloudProvider.Name()}
	coremetrics.CloudProviderDurationSeconds.With(labels).Observe(time.Since(start).Seconds()) //nolint:forbidigo // metrics measure real elapsed time
	if err != nil {
		labels[coremetrics.ErrorLabel] = errorKind(err)
		coremetrics.CloudProviderErrorsTotal.With(labels).Inc()
	}
}

// Create times and counts the wrapped Create.
func (c *CloudProvider) Create(ctx context.Context, nodeClaim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	start := time.Now() //nolint:forbidigo // metrics measure real elapsed time, not the controllers' clock
	out, err := c.CloudProvider.Create(ctx, nodeClaim)
	c.observe(ctx, "Create", start, err)
	return out, err
}

// Delete times and counts the wrapped Delete.
func (c *CloudProvider) Delete(ctx context.Context, nodeClaim *karpv1.NodeClaim) error {
	start := time.Now() //nolint:forbidigo // metrics measure real elapsed time
	err := c.CloudProvider.Delete(ctx, nodeClaim)
	c.observe(ctx, "Delete", start, err)
	return err
}

// Get times and counts the wrapped Get.
func (c *CloudProvider) Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	start := time.Now() //nolint:forbidigo // metrics measure real elapsed time
	out, err := c.CloudProvider.Get(ctx, providerID)
	c.observe(ctx, "Get", start, err)
	return out, err
}

// List times and counts the wrapped List.
func (c *CloudProvider) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	start := time.Now() //nolint:forbidigo // metrics measure real elapsed time
	out, err := c.CloudProvider.List(ctx)
	c.observe(ctx, "List", start, err)
	return out, err
}

// IsDrifted times and counts the wrapped IsDrifted.
func (c *CloudProvider) IsDrifted(ctx context.Context, nodeClaim *karpv1.NodeClaim) (cloudprovider.DriftReason, error) {
	start := time.Now() //nolint:forbidigo // metrics measure real elapsed time
	out, err := c.CloudProvider.IsDrifted(ctx, nodeClaim)
	c.observe(ctx, "IsDrifted", start, err)
	return out, err
}

// GetInstanceTypes times and counts the wrapped call and exports the
// price and availability of every offering returned.
func (c *CloudProvider) GetInstanceTypes(ctx context.Context, nodePool *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	start := time.Now() //nolint:forbidigo // metrics measure real elapsed time
	out, err := c.CloudProvider.GetInstanceTypes(ctx, nodePool)
	c.observe(ctx, "GetInstanceTypes", start, err)
	if err == nil && c.due(out) {
		publish(out)
	}
	return out, err
}

// due reports whether the list is to be exported now: a new list, or one
// last exported republishAfter ago or more.
func (c *CloudProvider) due(types []*cloudprovider.InstanceType) bool {
	if len(types) == 0 {
		return false
	}
	id := listID{first: types[0], n: len(types)}
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if at, ok := c.published[id]; ok && now.Sub(at) < republishAfter {
		return false
	}
	// Lists replaced by a provider's refresh are forgotten once stale.
	for old, at := range c.published {
		if now.Sub(at) >= republishAfter {
			delete(c.published, old)
		}
	}
	c.published[id] = now
	return true
}

// publish exports the price and availability of every offering of types.
func publish(types []*cloudprovider.InstanceType) {
	n := 0
	for _, it := range types {
		n += len(it.Offerings)
	}
	offs := make([]coremetrics.OfferingState, 0, n)
	for _, it := range types {
		for _, o := range it.Offerings {
			offs = append(offs, coremetrics.OfferingState{InstanceType: it.Name, CapacityType: o.CapacityType, Zone: o.Zone,
				Price: o.Price, Available: o.Available})
		}
	}
	coremetrics.Offerings.Publish(offs)
}
