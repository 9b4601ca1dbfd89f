package kwok

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
)

// resumeLaunches picks up delayed launches a previous controller process
// left unfinished. A real instance keeps booting when the controller that
// launched it dies; a kwok instance waiting out its registration delay
// lives only in that process's memory. So a NodeClaim that is Launched with
// a kwok providerID, not Registered, not deleting, with neither a Node nor
// a pending launch here, gets its launch restarted with what is left of
// the delay (counted from the Launched transition). live holds the names
// of the existing kwok Nodes, as the cache has them: a Node this process
// made is not resumed even when the cache does not show it yet (a second
// Create would be refused, or would bring back a Node deleted since).
func (c *CloudProvider) resumeLaunches(ctx context.Context, live sets.Set[string]) error {
	var claims karpv1.NodeClaimList
	if err := c.kubeClient.List(ctx, &claims); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	for i := range claims.Items {
		nodeClaim := &claims.Items[i]
		conditions := nodeClaim.StatusConditions()
		if !strings.HasPrefix(nodeClaim.Status.ProviderID, ProviderIDPrefix) || !nodeClaim.DeletionTimestamp.IsZero() ||
			!conditions.IsTrue(karpv1.ConditionTypeLaunched) || conditions.IsTrue(karpv1.ConditionTypeRegistered) {
			continue
		}
		name, err := nodeNameOf(nodeClaim.Status.ProviderID)
		if err != nil || name != nodeClaim.Name || live.Has(name) || c.isPending(name) || c.isMade(name) {
			continue
		}
		if err := c.resume(ctx, nodeClaim); err != nil {
			return fmt.Errorf("resuming the launch of nodeclaim %s: %w", nodeClaim.Name, err)
		}
	}
	return nil
}

func (c *CloudProvider) isMade(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.made.Has(name)
}

func (c *CloudProvider) isPending(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[name]
	return ok
}

// resume restarts one launch on the offering the NodeClaim's labels name.
func (c *CloudProvider) resume(ctx context.Context, nodeClaim *karpv1.NodeClaim) error {
	nodeClass, err := c.resolveNodeClass(ctx, nodeClaim)
	if err != nil {
		return err
	}
	launch, ok := c.launchOf(nodeClaim)
	if !ok {
		return fmt.Errorf("offering %s/%s/%s is not in the catalog", nodeClaim.Labels[corev1.LabelInstanceTypeStable],
			nodeClaim.Labels[corev1.LabelTopologyZone], nodeClaim.Labels[karpv1.CapacityTypeLabelKey])
	}
	delay := c.delay
	if nodeClass.Spec.NodeRegistrationDelay != nil {
		delay = nodeClass.Spec.NodeRegistrationDelay.Duration
	}
	if launched := nodeClaim.StatusConditions().Get(karpv1.ConditionTypeLaunched); launched != nil {
		delay -= c.clock.Since(launched.LastTransitionTime.Time)
	}
	node := buildNode(nodeClaim, nodeClass, launch)
	_, err = c.startLaunch(ctx, node, hydrate(nodeClaim, node), max(delay, 0))
	return err
}

// launchOf finds the instance type and offering a launched NodeClaim's
// labels name.
func (c *CloudProvider) launchOf(nodeClaim *karpv1.NodeClaim) (cloudprovider.Launch, bool) {
	labels := nodeClaim.Labels
	for _, it := range c.instanceTypes() {
		if it.Name != labels[corev1.LabelInstanceTypeStable] {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == labels[corev1.LabelTopologyZone] && o.CapacityType == labels[karpv1.CapacityTypeLabelKey] {
				return cloudprovider.Launch{InstanceType: it, Offering: o}, true
			}
		}
	}
	return cloudprovider.Launch{}, false
}
