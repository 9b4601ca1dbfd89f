package disruption

import (
	"context"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// Emptiness deletes nodes that run no reschedulable pods once their
// consolidateAfter elapsed, under every consolidation policy.
type Emptiness struct{}

// Name is "emptiness".
func (e *Emptiness) Name() string { return "emptiness" }

// ConsolidationType is "empty".
func (e *Emptiness) ConsolidationType() string { return "empty" }

// Reason is Empty.
func (e *Emptiness) Reason() karpv1.DisruptionReason { return karpv1.DisruptionReasonEmpty }

// NeedsValidation is true: the node must still be empty after the delay.
func (e *Emptiness) NeedsValidation() bool { return true }

// ShouldDisrupt keeps empty, consolidatable candidates.
func (e *Emptiness) ShouldDisrupt(_ context.Context, w *world, c *Candidate) (bool, blocker) {
	if len(c.ReschedulablePods) > 0 || c.NodePool.Spec.Replicas != nil {
		return false, blocker{}
	}
	return consolidatable(c, w.now)
}

// ComputeCommand deletes every empty candidate the budgets allow.
func (e *Emptiness) ComputeCommand(_ context.Context, w *world, _ Simulator, budgets Budgets, candidates ...*Candidate) (Command, error) {
	cands := w.withinBudget(budgets, e.Reason(), candidates)
	cmd := Command{Candidates: cands, Reason: e.Reason(), Method: e}
	for _, c := range cands {
		cmd.Savings += c.Price
	}
	return cmd, nil
}
