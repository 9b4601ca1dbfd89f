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

// explain records why every managed node the pass did not disrupt is kept:
// the DisruptionBlocked condition on its NodeClaim and an event on its
// Node, both only when the reason changed.
func (c *Controller) explain(ctx context.Context, w *world) error {
	queued := c.queuedIDs()
	var errs []error
	for _, sn := range w.stateNodes {
		if !sn.Managed() || sn.Node == nil || sn.NodeClaim.DeletionTimestamp != nil {
			continue
		}
		cond := sn.NodeClaim.StatusConditions().Get(ConditionTypeDisruptionBlocked)
		b, ok := w.blocked[sn.Name()]
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
		}
	}
	return errors.Join(errs...)
}
