package operator

import (
	"context"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/operator/fence"
)

// fencedCloudProvider refuses launches and terminations while the
// leader-election fence does not hold, as the fenced transport refuses API
// server writes: a replica resumed past its Lease would otherwise launch
// instances, or terminate ones it wrongly takes for leaked, from a stale
// view next to the new leader (see pkg/operator/fence). Reads pass.
type fencedCloudProvider struct {
	cloudprovider.CloudProvider
	fence *fence.Fence
}

// Create launches unless the fence is open.
func (c *fencedCloudProvider) Create(ctx context.Context, nodeClaim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	if err := c.fence.Check("launching nodeclaim " + nodeClaim.Name); err != nil {
		return nil, err
	}
	return c.CloudProvider.Create(ctx, nodeClaim)
}

// Delete terminates unless the fence is open.
func (c *fencedCloudProvider) Delete(ctx context.Context, nodeClaim *karpv1.NodeClaim) error {
	if err := c.fence.Check("terminating nodeclaim " + nodeClaim.Name); err != nil {
		return err
	}
	return c.CloudProvider.Delete(ctx, nodeClaim)
}

// Unwrap returns the fenced provider, so its optional capabilities are
// found through the decorator (cloudprovider.As).
func (c *fencedCloudProvider) Unwrap() cloudprovider.CloudProvider { return c.CloudProvider }
