package disruption

import (
	"context"
	"errors"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// ConditionTypeDisruptionBlocked is the NodeClaim condition that says why
// karp is not disrupting a managed node: True with the blocker's reason
// (DoNotDisrupt, PodDisruptionBudget, Budget, NoCheaperPlacement,
// ConsolidateAfter, ...) and a message naming the pod, PDB or budget. It
// is removed while the node is being disrupted.
const ConditionTypeDisruptionBlocked = "DisruptionBlocked"

// searchReasons are the blockers only a method's search records (budgets,
// what-if results). A pass may not search every node (a pending decision,
// an earlier method that acted, an unchanged memoized input, the
// single-node batch), so such a reason stands until a search says
// otherwise. Every other reason is evaluated for every node on every pass.
var searchReasons = map[string]bool{BlockedNoCheaper: true, BlockedBudget: true, BlockedSpotToSpot: true, BlockedDaemonSet: true}

// transientReasons are blockers that last only while pods are on their
// way to the node: a node nominated for pending pods is one karp has just
// launched or is filling. Writing them would cost a condition patch and an
// event per node of every scale-up (and again as the pod count in the
// message falls), at the moment the API server is busiest, for a state
// that is gone seconds later. The node is skipped as before; what is
// recorded is the reason that holds once its pods have landed.
var transientReasons = map[string]bool{BlockedNominated: true}

// explain records why every managed node the pass did not disrupt is kept:
// the DisruptionBlocked condition on its NodeClaim and an event on its
// Node, both only when the reason changed. A condition whose reason this
// pass no longer finds is removed, so it never outlives its cause (a
// consolidateAfter that has since elapsed).
func (c *Controller) explain(ctx context.Context, w *world) error {
	c.refreshEligibility(ctx, w)
	queued := c.queuedIDs()
	var errs []error
	for _, sn := range w.stateNodes {
		if !sn.Managed() || sn.Node == nil || sn.NodeClaim.DeletionTimestamp != nil {
			continue
		}
		cond := sn.NodeClaim.StatusConditions().Get(ConditionTypeDisruptionBlocked)
		b, ok := w.blocked[sn.Name()]
		if ok && transientReasons[b.reason] {
			ok = false
		}
		switch {
		case queued[sn.ID()] || sn.MarkedForDeletion:
			if cond != nil {
				errs = append(errs, c.patchNodeClaimStatus(ctx, sn.NodeClaim.Name, func(nc *karpv1.NodeClaim) {
					nc.StatusConditions().Clear(ConditionTypeDisruptionBlocked)
				}))
			}
			c.events.forget(string(sn.Node.UID))
		case ok:
			c.events.blocked(sn.Node, b)
			if cond == nil || cond.Reason != b.reason || cond.Message != b.message || cond.Status != "True" {
				errs = append(errs, c.patchNodeClaimStatus(ctx, sn.NodeClaim.Name, func(nc *karpv1.NodeClaim) {
					nc.StatusConditions().SetTrueWithReason(ConditionTypeDisruptionBlocked, b.reason, b.message)
				}))
			}
		case cond != nil && !searchReasons[cond.Reason]:
			errs = append(errs, c.patchNodeClaimStatus(ctx, sn.NodeClaim.Name, func(nc *karpv1.NodeClaim) {
				nc.StatusConditions().Clear(ConditionTypeDisruptionBlocked)
			}))
			c.events.forget(string(sn.Node.UID))
		}
	}
	return errors.Join(errs...)
}

// refreshEligibility applies the consolidation filters (policy, price,
// consolidateAfter) to every candidate nothing blocked yet this pass, so
// their reasons are current even when no consolidation method ran.
func (c *Controller) refreshEligibility(ctx context.Context, w *world) {
	empty, underutilized := &Emptiness{c: c}, &consolidation{c: c}
	for _, cand := range w.candidates {
		if _, ok := w.blocked[cand.Name()]; ok {
			continue
		}
		empty.ShouldDisrupt(ctx, cand)
		underutilized.ShouldDisrupt(ctx, cand)
	}
}
