package state

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// Snapshot returns every StateNode as simulator input (owned copies),
// along with the StateNode each came from, index for index. A node's Pods
// are its bound pods plus the pods nominated to it. Pods of a node marked
// for deletion that are already nominated elsewhere are left out, so they
// are not placed twice.
func (c *Cluster) Snapshot() ([]*simulation.Node, []*StateNode) {
	stateNodes := c.Nodes()
	out := make([]*simulation.Node, 0, len(stateNodes))
	for _, sn := range stateNodes {
		out = append(out, c.toSimulation(sn))
	}
	return out, stateNodes
}

// NodeConditionTaintGrace is how long ProvisioningSnapshot lets an
// initialized karp node keep the node lifecycle controller's not-ready or
// unreachable taint before counting the node as unusable.
const NodeConditionTaintGrace = time.Minute

// ProvisioningSnapshot is Snapshot for the provisioner: an initialized
// karp node whose not-ready or unreachable taint (the node lifecycle
// controller's, added when a kubelet's status or lease is late) is
// younger than NodeConditionTaintGrace keeps its room. A status or lease
// a few seconds late on a loaded API server would otherwise make karp
// launch new capacity for every pod that node could hold, only for the
// taint to go moments later. A node that stays unhealthy loses its room
// after the grace (and node repair replaces it later). Disruption uses
// Snapshot, which never moves pods onto such a node.
func (c *Cluster) ProvisioningSnapshot() ([]*simulation.Node, []*StateNode) {
	nodes, stateNodes := c.Snapshot()
	now := c.now()
	for i, n := range nodes {
		if sn := stateNodes[i]; sn.Managed() && sn.Node != nil && n.Initialized {
			n.Taints = withoutFreshConditionTaints(n.Taints, now)
		}
	}
	return nodes, stateNodes
}

// withoutFreshConditionTaints drops not-ready and unreachable taints added
// less than NodeConditionTaintGrace before now.
func withoutFreshConditionTaints(taints []corev1.Taint, now time.Time) []corev1.Taint {
	out := make([]corev1.Taint, 0, len(taints))
	for _, t := range taints {
		if (t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable) &&
			t.TimeAdded != nil && now.Sub(t.TimeAdded.Time) < NodeConditionTaintGrace {
			continue
		}
		out = append(out, t)
	}
	return out
}

func (c *Cluster) toSimulation(sn *StateNode) *simulation.Node {
	n := &simulation.Node{
		Name:              sn.Name(),
		Labels:            sn.Labels(),
		Capacity:          sn.Capacity(),
		Allocatable:       sn.Allocatable(),
		Initialized:       sn.Initialized(),
		MarkedForDeletion: sn.MarkedForDeletion,
	}
	switch {
	case sn.Node != nil:
		n.Taints = sn.Node.Spec.Taints
		if c.BatchHeld(sn) {
			// karp lifts its own batch hold: the node's room is real.
			n.Taints = slices.DeleteFunc(slices.Clone(n.Taints), karpv1.IsBatchHoldTaint)
		}
	default:
		// In flight: the node will carry the template's taints and its
		// startup taints; the solver ignores the latter until it starts.
		n.Taints = append(append([]corev1.Taint{}, sn.NodeClaim.Spec.Taints...), sn.NodeClaim.Spec.StartupTaints...)
		n.Requirements = NodeClaimRequirements(sn.NodeClaim)
	}
	if sn.NodeClaim != nil {
		n.StartupTaints = sn.NodeClaim.Spec.StartupTaints
	}
	// A node exists once its instance does; an in-flight NodeClaim once
	// it is Launched (until then it holds its capacity reservation).
	n.Launched = sn.Node != nil || (sn.NodeClaim != nil && sn.NodeClaim.StatusConditions().IsTrue(karpv1.ConditionTypeLaunched))
	for _, p := range sn.Pods {
		if sn.MarkedForDeletion && c.IsNominated(p) {
			continue
		}
		n.Pods = append(n.Pods, p)
	}
	n.Pods = append(n.Pods, sn.Nominated...)
	return n
}

// BatchHoldGrace is how long after its NodeClaim is initialized a node's
// batch hold is still taken to be going away. The batch controller lifts
// it within --batch-hold-duration; a hold still there long after is a
// fault, and the node then counts as tainted rather than keep pods
// nominated to it forever.
const BatchHoldGrace = 2 * time.Minute

// BatchHeld reports whether the node carries its batch hold and the hold
// is expected to go (see BatchHoldGrace): no pod can land on it yet, so
// it is empty because it is new, not because it is not needed.
func (c *Cluster) BatchHeld(sn *StateNode) bool {
	return sn.Node != nil && slices.ContainsFunc(sn.Node.Spec.Taints, karpv1.IsBatchHoldTaint) && c.holdExpected(sn)
}

// holdExpected reports whether the node's batch hold is expected to go.
func (c *Cluster) holdExpected(sn *StateNode) bool {
	if sn.NodeClaim == nil {
		return false
	}
	cond := sn.NodeClaim.StatusConditions().Get(karpv1.ConditionTypeInitialized)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		return true
	}
	return c.now().Sub(cond.LastTransitionTime.Time) < BatchHoldGrace
}

// NodeClaimRequirements are the NodeClaim's spec requirements.
func NodeClaimRequirements(nc *karpv1.NodeClaim) scheduling.Requirements {
	nsrs := make([]corev1.NodeSelectorRequirement, 0, len(nc.Spec.Requirements))
	for _, r := range nc.Spec.Requirements {
		nsrs = append(nsrs, corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values})
	}
	return scheduling.NewNodeSelectorRequirements(nsrs...)
}

// Synced reports whether the view holds every NodeClaim and Node that
// kubeClient lists, and every launched NodeClaim with its provider ID.
// While it is false, provisioning and disruption must not act: a NodeClaim
// missing from the view is capacity the solver would launch again.
//
// It also forgets NodeClaims the view holds that the API no longer lists
// and that are older than a grace period: a NodeClaim the provisioner
// recorded right after creating it can miss its own delete event when it
// is deleted before the informer delivered its creation.
func (c *Cluster) Synced(ctx context.Context) (bool, error) {
	var fullClaims karpv1.NodeClaimList
	if err := c.kubeClient.List(ctx, &fullClaims); err != nil {
		return false, fmt.Errorf("listing nodeclaims: %w", err)
	}
	var nodes corev1.NodeList
	if err := c.kubeClient.List(ctx, &nodes); err != nil {
		return false, fmt.Errorf("listing nodes: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	synced := true
	for i := range fullClaims.Items {
		nc := &fullClaims.Items[i]
		seen[nc.Name] = true
		have, ok := c.nodeClaims[nc.Name]
		if !ok || (nc.Status.ProviderID != "" && have.Status.ProviderID != nc.Status.ProviderID) {
			synced = false
		}
	}
	for i := range nodes.Items {
		if _, ok := c.nodes[nodes.Items[i].Name]; !ok {
			synced = false
		}
	}
	c.forgetVanished(seen)
	switch {
	case synced:
		c.unsyncedSince = time.Time{}
	case c.unsyncedSince.IsZero():
		c.unsyncedSince = c.clock.Now()
	}
	return synced, nil
}

// UnsyncedFor is how long the view has been behind the API server, as of
// the last Synced call (zero when that call found it synced).
func (c *Cluster) UnsyncedFor() time.Duration {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.unsyncedSince.IsZero() {
		return 0
	}
	return c.clock.Since(c.unsyncedSince)
}

// stateNodeClaimGrace is how long a NodeClaim may be in the view without
// the API listing it (informer lag) before the view forgets it.
const stateNodeClaimGrace = 15 * time.Second

func (c *Cluster) forgetVanished(listed map[string]bool) {
	now := c.now()
	for name := range c.nodeClaims {
		if !listed[name] && now.Sub(c.recordedAt[name]) > stateNodeClaimGrace {
			delete(c.nodeClaims, name)
			delete(c.recordedAt, name)
			delete(c.marked, nodeClaimID(name))
		}
	}
}
