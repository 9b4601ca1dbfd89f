package disruption

import (
	"context"
	"sort"
	"time"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// Drift replaces nodes whose NodeClaim is Drifted (set by the NodeClaim
// disruption controller), one per pass: empty ones first, then the longest
// drifted. Replacements may cost more; there is no validation delay.
type Drift struct{ c *Controller }

// Reason is Drifted.
func (d *Drift) Reason() karpv1.DisruptionReason { return karpv1.DisruptionReasonDrifted }

// ShouldDisrupt keeps drifted candidates.
func (d *Drift) ShouldDisrupt(_ context.Context, c *Candidate) bool {
	return c.NodeClaim().StatusConditions().IsTrue(karpv1.ConditionTypeDrifted)
}

// ComputeCommand returns the first candidate within budget whose pods all
// fit elsewhere or on replacements.
func (d *Drift) ComputeCommand(ctx context.Context, budgets Budgets, candidates ...*Candidate) (Command, error) {
	cands := append([]*Candidate(nil), candidates...)
	sort.SliceStable(cands, func(i, j int) bool {
		ei, ej := len(cands[i].ReschedulablePods) == 0, len(cands[j].ReschedulablePods) == 0
		if ei != ej {
			return ei
		}
		return driftedAt(cands[i]).Before(driftedAt(cands[j]))
	})
	for _, c := range withinBudget(d.c.pass, budgets, d.Reason(), cands) {
		res, err := d.c.simulator.Simulate(ctx, simulation.ConsolidationOptions{SpotToSpot: true}, c)
		if err != nil {
			return Command{}, err
		}
		if res.Decision == simulation.ConsolidationNone {
			d.c.pass.block(c.Name(), BlockedNoCheaper, "drifted, but %s", res.Reason)
			continue
		}
		return Command{Candidates: []*Candidate{c}, Replacements: res.Replacements, Reason: d.Reason(),
			Method: "drift", Savings: res.Savings}, nil
	}
	return Command{}, nil
}

func driftedAt(c *Candidate) time.Time {
	if cond := c.NodeClaim().StatusConditions().Get(karpv1.ConditionTypeDrifted); cond != nil {
		return cond.LastTransitionTime.Time
	}
	return time.Time{}
}
