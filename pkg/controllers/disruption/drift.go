package disruption

import (
	"context"
	"sort"
	"time"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// Drift replaces nodes whose NodeClaim is Drifted (set by the NodeClaim
// disruption controller), one per pass: empty ones first, then the longest
// drifted. Replacements may cost more; there is no validation delay.
type Drift struct{}

// Name is "drift".
func (d *Drift) Name() string { return "drift" }

// ConsolidationType is "": drift is not consolidation.
func (d *Drift) ConsolidationType() string { return "" }

// Reason is Drifted.
func (d *Drift) Reason() karpv1.DisruptionReason { return karpv1.DisruptionReasonDrifted }

// NeedsValidation is false: a drifted node stays drifted.
func (d *Drift) NeedsValidation() bool { return false }

// ShouldDisrupt keeps drifted candidates.
func (d *Drift) ShouldDisrupt(_ context.Context, _ *world, c *Candidate) (bool, blocker) {
	return c.NodeClaim().StatusConditions().IsTrue(karpv1.ConditionTypeDrifted), blocker{}
}

// ComputeCommand returns the first candidate within budget whose pods all
// fit elsewhere or on replacements.
func (d *Drift) ComputeCommand(ctx context.Context, w *world, sim Simulator, budgets Budgets, candidates ...*Candidate) (Command, error) {
	cands := append([]*Candidate(nil), candidates...)
	sort.SliceStable(cands, func(i, j int) bool {
		ei, ej := len(cands[i].ReschedulablePods) == 0, len(cands[j].ReschedulablePods) == 0
		if ei != ej {
			return ei
		}
		return driftedAt(cands[i]).Before(driftedAt(cands[j]))
	})
	return firstReplaceable(ctx, w, sim, d, d.Reason(), w.withinBudget(budgets, d.Reason(), cands),
		func(*Candidate) string { return "drifted, but " })
}

func driftedAt(c *Candidate) time.Time {
	if cond := c.NodeClaim().StatusConditions().Get(karpv1.ConditionTypeDrifted); cond != nil {
		return cond.LastTransitionTime.Time
	}
	return time.Time{}
}
