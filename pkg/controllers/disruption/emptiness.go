package disruption

import (
	"context"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// Emptiness deletes nodes that run no reschedulable pods once their
// consolidateAfter elapsed, under every consolidation policy.
type Emptiness struct{ c *Controller }

// Reason is Empty.
func (e *Emptiness) Reason() karpv1.DisruptionReason { return karpv1.DisruptionReasonEmpty }

// ShouldDisrupt keeps empty, consolidatable candidates.
func (e *Emptiness) ShouldDisrupt(_ context.Context, c *Candidate) bool {
	if len(c.ReschedulablePods) > 0 || c.NodePool.Spec.Replicas != nil {
		return false
	}
	ok, why := consolidatable(c, e.c.clock.Now())
	if !ok {
		e.c.pass.block(c.Name(), why.reason, "%s", why.message)
	}
	return ok
}

// ComputeCommand deletes every empty candidate the budgets allow.
func (e *Emptiness) ComputeCommand(_ context.Context, budgets Budgets, candidates ...*Candidate) (Command, error) {
	cands := withinBudget(e.c.pass, budgets, e.Reason(), candidates)
	cmd := Command{Candidates: cands, Reason: e.Reason(), Method: "emptiness"}
	for _, c := range cands {
		cmd.Savings += c.Price
	}
	return cmd, nil
}
