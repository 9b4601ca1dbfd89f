package disruption

import (
	"context"
	"slices"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/simulation"
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

// ComputeCommand deletes every empty candidate the budgets allow, except
// those whose room the pending pods or the pods of nodes being deleted
// need (as consolidation, and as upstream's emptiness, which simulates).
func (e *Emptiness) ComputeCommand(ctx context.Context, w *world, sim Simulator, budgets Budgets, candidates ...*Candidate) (Command, error) {
	cands, err := notNeededByWaitingPods(ctx, sim, w.withinBudget(budgets, e.Reason(), candidates))
	if err != nil {
		return Command{}, err
	}
	cmd := Command{Candidates: cands, Reason: e.Reason(), Method: e}
	for _, c := range cands {
		cmd.Savings += c.Price
	}
	return cmd, nil
}

// notNeededByWaitingPods keeps the empty candidates that can go while the
// waiting pods (pending, or on nodes being deleted) still find room on
// the nodes that stay: all of them when removing them together simulates
// to a plain delete, otherwise, in order, each that still does together
// with those kept before it.
func notNeededByWaitingPods(ctx context.Context, sim Simulator, cands []*Candidate) ([]*Candidate, error) {
	if len(cands) == 0 {
		return nil, nil
	}
	deletable := func(set []*Candidate) (bool, error) {
		res, err := sim.Simulate(ctx, simulation.ConsolidationOptions{RequireCheaper: true}, set...)
		if err != nil {
			return false, err
		}
		return res.Decision == simulation.ConsolidationDelete, nil
	}
	ok, err := deletable(cands)
	if err != nil || ok {
		return cands, err
	}
	var kept []*Candidate
	for _, c := range cands {
		next := append(slices.Clip(kept), c)
		ok, err := deletable(next)
		if err != nil {
			return nil, err
		}
		if ok {
			kept = next
		}
	}
	return kept, nil
}
