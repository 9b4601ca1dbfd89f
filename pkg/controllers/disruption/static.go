package disruption

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// isStatic reports whether the candidate's NodePool is static
// (spec.replicas): its nodes are never consolidated, and the methods that
// replace a node (drift, expiration, rebalance, interruption, repair,
// DaemonSet fit) replace one of its nodes one for one from its template
// (staticCommand) instead of placing the node's pods.
func isStatic(c *Candidate) bool { return c.NodePool.Spec.Replicas != nil }

// staticCommand is the command that replaces a node of a static NodePool
// with a fresh NodeClaim of its template, as upstream's static drift does,
// or why there is none:
//   - a NodePool with more nodes than replicas scales down first (the
//     nodepool/static controller deletes the surplus);
//   - a NodePool at its limits.nodes has no room for the replacement: a
//     drifted node is then deleted first (the static controller launches
//     its replacement once it is gone, so the NodePool stays within its
//     limit), other nodes wait for their deadline;
//   - a template no instance type satisfies has no replacement.
//
// The budgets were applied by the caller.
func staticCommand(w *world, sim Simulator, m Method, reason karpv1.DisruptionReason, c *Candidate) (Command, string) {
	np := c.NodePool
	active, total := 0, 0
	for _, sn := range w.stateNodes {
		if !sn.Managed() || sn.NodePool() != np.Name {
			continue
		}
		total++
		if !sn.MarkedForDeletion {
			active++
		}
	}
	if replicas := *np.Spec.Replicas; int64(active) > replicas {
		return Command{}, fmt.Sprintf("static NodePool %s has %d nodes for %d replicas and scales down first", np.Name, active, replicas)
	}
	if limit, ok := np.Spec.Limits[corev1.ResourceName("nodes")]; ok && int64(total) >= limit.Value() {
		if reason != karpv1.DisruptionReasonDrifted {
			return Command{}, fmt.Sprintf("static NodePool %s is at its limit of %d nodes: no room to launch a replacement ahead",
				np.Name, limit.Value())
		}
		return Command{Candidates: []*Candidate{c}, Reason: reason, Method: m, Savings: c.Price}, ""
	}
	claims, why := sim.StaticReplacement(np, w.typeList[np.Name])
	if why != "" {
		return Command{}, why
	}
	return Command{Candidates: []*Candidate{c}, Replacements: claims, Reason: reason, Method: m,
		Savings: c.Price - claims[0].Price}, ""
}

// StaticReplacement renders one NodeClaim of the static NodePool's
// template (simulation.StaticNodeClaims) over the pass's DaemonSets,
// LimitRanges and nodes.
func (s *passSimulator) StaticReplacement(np *karpv1.NodePool, types []*scheduling.InstanceType) ([]*simulation.NodeClaim, string) {
	in := simulation.Input{Nodes: s.in.Nodes, DaemonSets: s.in.DaemonSets, LimitRanges: s.in.LimitRanges, Options: s.opts}
	return simulation.StaticNodeClaims(in, &simulation.NodePool{NodePool: np, InstanceTypes: types}, 1)
}
