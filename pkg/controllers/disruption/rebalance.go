package disruption

import (
	"context"
	"sort"
	"time"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// ReasonSpotRebalance is the disruption reason of the commands of
// SpotRebalance: their DisruptionReason condition, events, logs and the
// reason label of the decision and disrupted-NodeClaim metrics. It is no
// budget reason (the NodePool schema's enum stays upstream's): the
// commands count against the Drifted budgets.
const ReasonSpotRebalance karpv1.DisruptionReason = "SpotRebalance"

// SpotRebalance replaces nodes whose NodeClaim is RebalanceRecommended (the
// cloud recommended rebalancing its spot instance and the NodePool opted
// in with karp.sh/spot-rebalance: replace), one per pass, empty ones first,
// then the longest recommended. Like drift it replaces at any price and
// without a validation delay: the replacement launches at once and the
// node is drained only once the replacement is initialized; a replacement
// that does not initialize within the queue timeout leaves the node
// serving, with the usual backoff. The offering the node runs on was
// marked unavailable before the condition was set (by the provider), so
// the replacement lands on another one.
//
// Its commands count against the Drifted budgets (Reason): like drift, a
// recommended node is replaced eventually, whatever it costs, and users
// who throttle or pause drift (a maintenance window) expect the same of
// this replacement; a burst of recommendations across a fleet is then
// rolled at the budget's pace rather than all at once. Unlike drift it
// does not take nodes a pod blocks (do-not-disrupt, a PDB) even with a
// terminationGracePeriod: a recommendation is advice, not a deadline, and
// the interruption itself, if it comes, is handled by the interruption
// controller.
type SpotRebalance struct{}

// Name is "rebalance".
func (r *SpotRebalance) Name() string { return "rebalance" }

// ConsolidationType is "": the replacement is not consolidation.
func (r *SpotRebalance) ConsolidationType() string { return "" }

// Reason is Drifted, the budgets the commands count against; the commands
// themselves carry ReasonSpotRebalance.
func (r *SpotRebalance) Reason() karpv1.DisruptionReason { return karpv1.DisruptionReasonDrifted }

// NeedsValidation is false: a recommendation is not withdrawn.
func (r *SpotRebalance) NeedsValidation() bool { return false }

// ShouldDisrupt keeps RebalanceRecommended candidates of NodePools that
// still opt in; a pod-blocked candidate is left (its blocker is recorded).
func (r *SpotRebalance) ShouldDisrupt(_ context.Context, _ *world, c *Candidate) (bool, blocker) {
	return !c.PodBlocked && c.NodePool.ReplacesOnSpotRebalance() &&
		c.NodeClaim().StatusConditions().IsTrue(karpv1.ConditionTypeRebalanceRecommended), blocker{}
}

// ComputeCommand returns the first candidate within the Drifted budgets
// whose pods all fit elsewhere or on replacements.
func (r *SpotRebalance) ComputeCommand(ctx context.Context, w *world, sim Simulator, budgets Budgets, candidates ...*Candidate) (Command, error) {
	cands := append([]*Candidate(nil), candidates...)
	sort.SliceStable(cands, func(i, j int) bool {
		ei, ej := len(cands[i].ReschedulablePods) == 0, len(cands[j].ReschedulablePods) == 0
		if ei != ej {
			return ei
		}
		return recommendedAt(cands[i]).Before(recommendedAt(cands[j]))
	})
	return firstReplaceable(ctx, w, sim, r, ReasonSpotRebalance, w.withinBudget(budgets, r.Reason(), cands),
		func(*Candidate) string { return "rebalance recommended, but " })
}

func recommendedAt(c *Candidate) time.Time {
	if cond := c.NodeClaim().StatusConditions().Get(karpv1.ConditionTypeRebalanceRecommended); cond != nil {
		return cond.LastTransitionTime.Time
	}
	return time.Time{}
}
