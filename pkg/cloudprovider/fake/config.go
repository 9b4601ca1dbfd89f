package fake

import (
	"slices"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
)

// SetInstanceTypes replaces the provider-wide instance types.
func (c *CloudProvider) SetInstanceTypes(types ...*cloudprovider.InstanceType) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.instanceTypes = types
}

// SetInstanceTypesForNodePool makes the named NodePool see only types.
func (c *CloudProvider) SetInstanceTypesForNodePool(nodePool string, types ...*cloudprovider.InstanceType) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodePoolTypes[nodePool] = types
}

// SetInstanceTypesError makes GetInstanceTypes (and Create) for the named
// NodePool fail with err until cleared with a nil err.
func (c *CloudProvider) SetInstanceTypesError(nodePool string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		delete(c.nodePoolErrors, nodePool)
		return
	}
	c.nodePoolErrors[nodePool] = err
}

// SetNextCreateError makes the next Create return err (once).
func (c *CloudProvider) SetNextCreateError(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextCreateErr = err
}

// SetNextGetError makes the next Get return err (once).
func (c *CloudProvider) SetNextGetError(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextGetErr = err
}

// SetNextDeleteError makes the next Delete return err (once).
func (c *CloudProvider) SetNextDeleteError(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextDeleteErr = err
}

// SetAllowedCreateCalls lets only n more instances launch (retries of an
// existing NodeClaim do not count); negative means unlimited.
func (c *CloudProvider) SetAllowedCreateCalls(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.allowedCreateCalls = n
}

// SetInsufficientCapacity makes Create refuse the given offerings until
// cleared with ClearInsufficientCapacity.
func (c *CloudProvider) SetInsufficientCapacity(offerings ...cloudprovider.OfferingKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.insufficient.Insert(offerings...)
}

// ClearInsufficientCapacity makes every offering launchable again.
func (c *CloudProvider) ClearInsufficientCapacity() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.insufficient.Clear()
}

// SetDrifted makes IsDrifted return reason for the providerID (empty clears it).
func (c *CloudProvider) SetDrifted(providerID string, reason cloudprovider.DriftReason) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if reason == "" {
		delete(c.drifted, providerID)
		return
	}
	c.drifted[providerID] = reason
}

// SetRepairPolicies replaces the repair policies (none disables repair).
func (c *CloudProvider) SetRepairPolicies(policies ...cloudprovider.RepairPolicy) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.repairPolicies = policies
}

// CreateCalls returns copies of the NodeClaims Create was called with, in order.
func (c *CloudProvider) CreateCalls() []*karpv1.NodeClaim {
	c.mu.Lock()
	defer c.mu.Unlock()
	return copyAll(c.createCalls)
}

// DeleteCalls returns copies of the NodeClaims Delete was called with, in order.
func (c *CloudProvider) DeleteCalls() []*karpv1.NodeClaim {
	c.mu.Lock()
	defer c.mu.Unlock()
	return copyAll(c.deleteCalls)
}

// GetCalls returns the providerIDs Get was called with, in order.
func (c *CloudProvider) GetCalls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.getCalls)
}

func copyAll(in []*karpv1.NodeClaim) []*karpv1.NodeClaim {
	out := make([]*karpv1.NodeClaim, len(in))
	for i, nc := range in {
		out[i] = nc.DeepCopy()
	}
	return out
}
