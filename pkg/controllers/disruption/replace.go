package disruption

import (
	"context"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// firstReplaceable is the search of the methods that replace one node at
// any price (drift, spot rebalance, expiration, interruption, repair): it
// simulates the candidates in order and returns the command that replaces
// the first whose pods all fit elsewhere or on new capacity. A candidate
// it cannot replace is recorded as blocked (BlockedNoCheaper), its
// message why(candidate) followed by the simulation's reason. A node of a
// static NodePool is replaced one for one from its template instead
// (staticCommand).
func firstReplaceable(ctx context.Context, w *world, sim Simulator, m Method, reason karpv1.DisruptionReason,
	cands []*Candidate, why func(*Candidate) string) (Command, error) {
	for _, c := range cands {
		if isStatic(c) {
			cmd, whyNot := staticCommand(w, sim, m, reason, c)
			if whyNot != "" {
				w.block(c.Name(), BlockedNoCheaper, "%s%s", why(c), whyNot)
				continue
			}
			return cmd, nil
		}
		res, err := sim.Simulate(ctx, simulation.ConsolidationOptions{SpotToSpot: true}, c)
		if err != nil {
			return Command{}, err
		}
		if res.Decision == simulation.ConsolidationNone {
			w.block(c.Name(), BlockedNoCheaper, "%s%s", why(c), res.Reason)
			continue
		}
		return Command{Candidates: []*Candidate{c}, Replacements: res.Replacements, Reason: reason,
			Method: m, Savings: res.Savings}, nil
	}
	return Command{}, nil
}
