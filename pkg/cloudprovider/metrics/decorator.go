package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
}

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// Decorate wraps cp with coremetrics.
func Decorate(cp cloudprovider.CloudProvider) *CloudProvider {
	return &CloudProvider{CloudProvider: cp}
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
	if err == nil {
		publish(out)
	}
	return out, err
}

// publish exports the price and availability of every offering of types.
func publish(types []*cloudprovider.InstanceType) {
	var offs []coremetrics.OfferingState
	for _, it := range types {
		for _, o := range it.Offerings {
			offs = append(offs, coremetrics.OfferingState{InstanceType: it.Name, CapacityType: o.CapacityType, Zone: o.Zone,
				Price: o.Price, Available: o.Available})
		}
	}
	coremetrics.Offerings.Publish(offs)
}
