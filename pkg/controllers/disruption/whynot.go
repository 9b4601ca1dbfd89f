package disruption

import (
	"context"
	"errors"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/state"
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
// launched or is filling, a node under its batch hold one just launched.
// Writing them would cost a condition patch and an event per node of
// every scale-up (and again as the pod count in the message falls), at
// the moment the API server is busiest, for a state that is gone seconds
// later. The node is skipped as before; what is recorded is the reason
// that holds once its pods have landed.
var transientReasons = map[string]bool{BlockedNominated: true, BlockedBatchHold: true}

// explain records why every managed node the pass did not disrupt is kept:
// the DisruptionBlocked condition on its NodeClaim and an event on its
// Node, both only when the reason changed (see whyNot, which decides).
func (c *Controller) explain(ctx context.Context, w *world) error {
	var errs []error
	for _, e := range whyNot(ctx, w, c.queuedIDs()) {
		sn := e.node
		if e.blocked.reason != "" {
			c.events.blocked(sn.Node, e.blocked)
		}
		switch {
		case e.write:
			b := e.blocked
			errs = append(errs, c.patchNodeClaimStatus(ctx, sn.NodeClaim.Name, func(nc *karpv1.NodeClaim) {
				nc.StatusConditions().SetTrueWithReason(ConditionTypeDisruptionBlocked, b.reason, b.message)
			}))
		case e.clear:
			errs = append(errs, c.patchNodeClaimStatus(ctx, sn.NodeClaim.Name, func(nc *karpv1.NodeClaim) {
				nc.StatusConditions().Clear(ConditionTypeDisruptionBlocked)
			}))
		}
		if e.forget {
			c.events.forget(string(sn.Node.UID))
		}
	}
	// Forget the events of nodes that are gone.
	live := make(map[string]bool, len(w.stateNodes))
	for _, sn := range w.stateNodes {
		if sn.Node != nil {
			live[string(sn.Node.UID)] = true
		}
	}
	c.events.retain(live)
	return errors.Join(errs...)
}

// explanation is what a pass records on one managed node.
type explanation struct {
	node *state.StateNode
	// blocked is why the node stays (its event); zero when nothing this
	// pass found holds it.
	blocked blocker
	// write sets the DisruptionBlocked condition to blocked; clear removes
	// the condition.
	write, clear bool
	// forget drops the de-duplication of the node's events, so the next
	// reason it is blocked for is published again.
	forget bool
}

// whyNot decides, from the pass's world alone, what to record on each
// managed node: for a node being disrupted (queued or marked), the
// condition goes; for a blocked node, its blocker is the condition (when
// it changed) and the event; for another node, a condition whose reason
// this pass no longer finds is removed, so it never outlives its cause (a
// consolidateAfter that has since elapsed), except the search results,
// which stand until the next search of the node (searchReasons). It first
// applies the consolidation filters to every candidate nothing blocked
// yet, so their reasons are current even when no consolidation method
// ran. It is pure: no client, no clock.
func whyNot(ctx context.Context, w *world, queued map[string]bool) []explanation {
	refreshEligibility(ctx, w)
	var out []explanation
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
			out = append(out, explanation{node: sn, clear: cond != nil, forget: true})
		case ok:
			changed := cond == nil || cond.Reason != b.reason || cond.Message != b.message || cond.Status != "True"
			out = append(out, explanation{node: sn, blocked: b, write: changed})
		case cond != nil && !searchReasons[cond.Reason]:
			out = append(out, explanation{node: sn, clear: true, forget: true})
		}
	}
	return out
}

// refreshEligibility applies the consolidation filters (policy, price,
// consolidateAfter) to every candidate nothing blocked yet this pass and
// records what holds them.
func refreshEligibility(ctx context.Context, w *world) {
	filters := []Method{&Emptiness{}, &MultiNodeConsolidation{}}
	for _, cand := range w.candidates {
		if _, ok := w.blocked[cand.Name()]; ok {
			continue
		}
		for _, m := range filters {
			if ok, why := m.ShouldDisrupt(ctx, w, cand); !ok {
				w.record(cand.Name(), why)
			}
		}
	}
}
