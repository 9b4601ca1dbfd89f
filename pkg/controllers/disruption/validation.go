package disruption

import (
	"context"
	"fmt"
	"time"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// pending is a decision waiting for its validation delay (its method's
// NeedsValidation).
type pending struct {
	cmd Command
	at  time.Time
}

// evaluator is a method that can re-run its what-if on a given set of
// candidates (the consolidation methods).
type evaluator interface {
	evaluate(ctx context.Context, w *world, sim Simulator, by Method, cands []*Candidate) (Command, blocker, error)
}

// validate re-checks a pending decision against the pass's fresh state:
// its candidates must still be candidates the method wants and the budgets
// allow, and a consolidation must still simulate to a delete or a
// replacement by no more nodes. Emptiness keeps the still-empty subset.
// It returns the command to run, or an empty one and why.
func (c *Controller) validate(ctx context.Context, w *world, p *pending) (Command, string) {
	method := p.cmd.Method
	// Emptiness deletes whatever is still empty; every other method's move
	// holds only with all its candidates.
	subset := method.Reason() == karpv1.DisruptionReasonEmpty
	fresh := map[string]*Candidate{}
	for _, cand := range w.candidates {
		fresh[cand.Name()] = cand
	}
	var still []*Candidate
	for _, old := range p.cmd.Candidates {
		cand := fresh[old.Name()]
		ok := false
		if cand != nil && !mayTake(method, cand) {
			cand = nil
		}
		if cand != nil {
			var why blocker
			ok, why = method.ShouldDisrupt(ctx, w, cand)
			w.record(cand.Name(), why)
		}
		if !ok {
			if subset {
				continue
			}
			return Command{}, fmt.Sprintf("node %s is no longer a %s candidate", old.Name(), method.Name())
		}
		still = append(still, cand)
	}
	budgets := c.budgets(ctx, w, method.Reason())
	inBudget := w.withinBudget(budgets, method.Reason(), still)
	if subset {
		cmd, _ := method.ComputeCommand(ctx, w, c.simulator, c.budgets(ctx, w, method.Reason()), inBudget...)
		if cmd.Empty() {
			return Command{}, "no candidate is still empty and within budget"
		}
		return cmd, ""
	}
	if len(inBudget) < len(still) || len(still) == 0 {
		return Command{}, "the disruption budget no longer allows the move"
	}
	if len(still) > 1 {
		if kept, over := w.withinRolloutBudgets(still); len(kept) < len(still) {
			for _, cand := range still {
				if why, ok := over[cand.Name()]; ok {
					return Command{}, fmt.Sprintf("node %s would take more pods than the rollout budget allows: %s", cand.Name(), why)
				}
			}
		}
	}
	ev, ok := method.(evaluator)
	if !ok {
		return Command{}, fmt.Sprintf("method %s cannot re-check its move", method.Name())
	}
	cmd, why, err := ev.evaluate(ctx, w, c.simulator, method, still)
	if err != nil {
		return Command{}, err.Error()
	}
	if cmd.Empty() {
		return Command{}, "the move no longer holds: " + why.message
	}
	if len(cmd.Replacements) > len(p.cmd.Replacements) {
		return Command{}, fmt.Sprintf("the move now needs %d replacements instead of %d", len(cmd.Replacements), len(p.cmd.Replacements))
	}
	return cmd, ""
}
