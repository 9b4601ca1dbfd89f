package disruption

import (
	"context"
	"sort"
	"time"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/metrics"
)

// Reasons of the commands that replace a node ahead of a forceful
// deletion its NodeClaim's replace-by annotation announces.
const (
	DisruptionReasonInterrupted karpv1.DisruptionReason = "Interrupted"
	DisruptionReasonUnhealthy   karpv1.DisruptionReason = "Unhealthy"
)

// ReplaceBy launches the replacement capacity the pods of a node need
// when its NodeClaim carries a replace-by deadline for the method's
// reason (karpv1.ReplaceByAnnotationKey: an interruption notice that
// leaves time for a launch, a repair), and deletes the NodeClaim once the
// replacements are initialized, so its pods do not wait for a launch. The
// nodeclaim expiration controller deletes the NodeClaim at the deadline
// whatever is in flight; a node the replacement may not take first (a
// do-not-disrupt pod, a PDB, a rollout budget, no placement) waits for
// that. Budgets do not apply, as to the forceful deletion it precedes.
type ReplaceBy struct {
	name   string
	reason karpv1.DisruptionReason
	// signal is the replace-reason annotation value the method takes;
	// "" takes every value the other instances do not (an interruption
	// handler's reason: "interrupted", AWS's "spot_interrupted").
	signal string
}

// NewReplaceByMethods are the methods for the interruption and repair
// signals.
func NewReplaceByMethods() []Method {
	return []Method{
		&ReplaceBy{name: "interruption", reason: DisruptionReasonInterrupted},
		&ReplaceBy{name: "repair", reason: DisruptionReasonUnhealthy, signal: metrics.ReasonUnhealthy},
	}
}

// Name is "interruption" or "repair".
func (r *ReplaceBy) Name() string { return r.name }

// ConsolidationType is "": not consolidation.
func (r *ReplaceBy) ConsolidationType() string { return "" }

// Reason is Interrupted or Unhealthy.
func (r *ReplaceBy) Reason() karpv1.DisruptionReason { return r.reason }

// NeedsValidation is false: the signal does not go away.
func (r *ReplaceBy) NeedsValidation() bool { return false }

// IgnoresBudgets is true: the deletion is forceful anyway.
func (r *ReplaceBy) IgnoresBudgets() bool { return true }

// ShouldDisrupt keeps candidates whose NodeClaim carries the method's
// replace-by signal.
func (r *ReplaceBy) ShouldDisrupt(_ context.Context, _ *world, c *Candidate) (bool, blocker) {
	_, why, ok := c.NodeClaim().ReplaceBy()
	if r.signal == "" {
		return ok && why != metrics.ReasonUnhealthy, blocker{}
	}
	return ok && why == r.signal, blocker{}
}

// ComputeCommand returns the replacement of the candidate due first whose
// pods all fit elsewhere or on new capacity.
func (r *ReplaceBy) ComputeCommand(ctx context.Context, w *world, sim Simulator, _ Budgets, candidates ...*Candidate) (Command, error) {
	cands := append([]*Candidate(nil), candidates...)
	sort.SliceStable(cands, func(i, j int) bool {
		ai, _, _ := cands[i].NodeClaim().ReplaceBy()
		aj, _, _ := cands[j].NodeClaim().ReplaceBy()
		return ai.Before(aj)
	})
	return firstReplaceable(ctx, w, sim, r, r.reason, cands, func(c *Candidate) string {
		at, why, _ := c.NodeClaim().ReplaceBy()
		return why + ": deleted by " + at.UTC().Format(time.RFC3339) + ", but its replacement cannot be launched first: "
	})
}
