package disruption

import (
	"context"
	"fmt"
	"time"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// pending is a consolidation decision waiting for its validation delay.
type pending struct {
	cmd    Command
	method Method
	at     time.Time
}

// needsValidation reports whether a method's commands wait and are
// re-checked before they run (emptiness and consolidation, as upstream;
// drift runs at once).
func needsValidation(m Method) bool {
	return m.Reason() != karpv1.DisruptionReasonDrifted
}

// validate re-checks a pending decision against the pass's fresh state:
// its candidates must still be candidates the method wants and the budgets
// allow, and a consolidation must still simulate to a delete or a
// replacement by no more nodes. Emptiness keeps the still-empty subset.
// It returns the command to run, or an empty one and why.
func (c *Controller) validate(ctx context.Context, w *world, p *pending) (Command, string) {
	fresh := map[string]*Candidate{}
	for _, cand := range w.candidates {
		fresh[cand.Name()] = cand
	}
	var still []*Candidate
	for _, old := range p.cmd.Candidates {
		cand := fresh[old.Name()]
		if cand == nil || !p.method.ShouldDisrupt(ctx, cand) {
			if _, isEmptiness := p.method.(*Emptiness); isEmptiness {
				continue
			}
			return Command{}, fmt.Sprintf("node %s is no longer a %s candidate", old.Name(), p.cmd.Method)
		}
		still = append(still, cand)
	}
	inBudget := withinBudget(w, buildBudgets(ctx, w, p.method.Reason()), p.method.Reason(), still)
	if _, isEmptiness := p.method.(*Emptiness); isEmptiness {
		cmd, _ := p.method.ComputeCommand(ctx, buildBudgets(ctx, w, p.method.Reason()), inBudget...)
		if cmd.Empty() {
			return Command{}, "no candidate is still empty and within budget"
		}
		return cmd, ""
	}
	if len(inBudget) < len(still) || len(still) == 0 {
		return Command{}, "the disruption budget no longer allows the move"
	}
	m := &consolidation{c: c}
	cmd, why, err := m.evaluate(ctx, p.cmd.Method, still)
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
