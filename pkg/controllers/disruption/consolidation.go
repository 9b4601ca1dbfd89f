package disruption

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// consolidation holds what the multi- and single-node methods share.
type consolidation struct{ opts Options }

// Reason is Underutilized.
func (m *consolidation) Reason() karpv1.DisruptionReason { return karpv1.DisruptionReasonUnderutilized }

// NeedsValidation is true: the move must still hold after the delay.
func (m *consolidation) NeedsValidation() bool { return true }

// ShouldDisrupt keeps non-empty candidates of NodePools that consolidate
// underutilized nodes, with a known price, once consolidateAfter elapsed;
// the others come with why they are kept.
func (m *consolidation) ShouldDisrupt(_ context.Context, w *world, c *Candidate) (bool, blocker) {
	if len(c.ReschedulablePods) == 0 || c.NodePool.Spec.Replicas != nil {
		return false, blocker{}
	}
	if c.NodePool.Spec.Disruption.ConsolidationPolicy == karpv1.ConsolidationPolicyWhenEmpty {
		return false, blocker{BlockedPolicy, fmt.Sprintf("NodePool %s consolidates only empty nodes (WhenEmpty) and the node runs %d pod(s)",
			c.NodePool.Name, len(c.ReschedulablePods))}
	}
	if c.InstanceType == nil || c.Price == 0 {
		return false, blocker{BlockedUnknownPrice, "the node's instance type or price is unknown"}
	}
	return consolidatable(c, w.now)
}

// sortForConsolidation orders candidates by price per unit of disruption,
// highest first (upstream's order): expensive, lightly used nodes first.
func sortForConsolidation(cands []*Candidate) []*Candidate {
	out := append([]*Candidate(nil), cands...)
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].Price/out[i].DisruptionCost > out[j].Price/out[j].DisruptionCost
	})
	return out
}

// evaluate simulates removing the candidates and returns the command of
// method by, or an empty one with why not.
func (m *consolidation) evaluate(ctx context.Context, w *world, sim Simulator, by Method, cands []*Candidate) (Command, blocker, error) {
	res, err := sim.Simulate(ctx, simulation.ConsolidationOptions{RequireCheaper: true,
		SpotToSpot: m.opts.SpotToSpot}, cands...)
	if err != nil {
		return Command{}, blocker{}, err
	}
	if res.Decision == simulation.ConsolidationNone {
		if res.SpotToSpot {
			return Command{}, blocker{BlockedSpotToSpot, res.Reason}, nil
		}
		return Command{}, blocker{BlockedNoCheaper, res.Reason}, nil
	}
	cmd := Command{Candidates: cands, Replacements: res.Replacements, Reason: m.Reason(), Method: by, Savings: res.Savings}
	if why := balanced(w, cmd); why != "" {
		return Command{}, blocker{BlockedNoCheaper, why}, nil
	}
	return cmd, blocker{}, nil
}

// balanced applies the Balanced policy of every NodePool the command
// touches: each must find the move worth its disruption.
func balanced(w *world, cmd Command) string {
	savings, disruption := map[string]float64{}, map[string]float64{}
	for _, c := range cmd.Candidates {
		savings[c.NodePool.Name] += c.Price
		disruption[c.NodePool.Name] += c.DisruptionCost
	}
	for _, r := range cmd.Replacements {
		savings[r.NodePool.Name] -= simulation.WorstLaunchPrice(r)
	}
	// Every pool the move touches is scored and counted before the answer,
	// so the metrics see each pool's decision.
	why := ""
	seen := map[string]bool{}
	for _, c := range cmd.Candidates {
		np := c.NodePool
		if seen[np.Name] {
			continue
		}
		seen[np.Name] = true
		policy := string(np.Spec.Disruption.ConsolidationPolicy)
		if np.Spec.Disruption.ConsolidationPolicy != karpv1.ConsolidationPolicyBalanced {
			consolidationMoves.WithLabelValues(moveApproved, np.Name, policy).Inc()
			continue
		}
		score, ok := simulation.BalancedApproves(savings[np.Name], w.poolCost[np.Name], disruption[np.Name], w.poolDisruption[np.Name])
		decision := moveApproved
		if ok {
			w.approvals = append(w.approvals, approval{cmd: cmd, nodePool: np, score: balancedScore{score: score,
				savingsPct: percent(savings[np.Name], w.poolCost[np.Name]), disruptionPct: percent(disruption[np.Name], w.poolDisruption[np.Name])}})
		} else {
			decision = moveRejected
			if why == "" {
				why = fmt.Sprintf("NodePool %s is Balanced and the saving ($%.4f/h) is not worth the disruption (score %.2f < 0.5)",
					np.Name, savings[np.Name], score)
			}
		}
		consolidationMoves.WithLabelValues(decision, np.Name, policy).Inc()
		consolidationScore.WithLabelValues(decision, np.Name, policy).Observe(score)
	}
	return why
}

// Upstream's Balanced parameters, as simulation.BalancedApproves applies
// them: a move passes at score >= 1/k.
const (
	balancedK         = 2
	balancedThreshold = 1.0 / balancedK
)

// balancedScore is a Balanced NodePool's view of a move: the score and the
// shares of the pool's cost saved and disruption caused, in percent.
type balancedScore struct {
	score, savingsPct, disruptionPct float64
}

func percent(part, whole float64) float64 {
	if whole <= 0 {
		return 0
	}
	return 100 * part / whole
}

// MultiNodeConsolidation looks for the largest prefix of the candidates
// (in consolidation order, within budgets and the rollout budgets of their
// pods' controllers, at most MaxMultiNodeCandidates) that can go at once,
// by binary search on the prefix length: the search is O(log n) solves,
// which bounds it at 1,000 nodes (upstream issue 3186). A prefix succeeds
// when it can be deleted or replaced by fewer, cheaper nodes.
type MultiNodeConsolidation struct{ consolidation }

// Name is "multi".
func (m *MultiNodeConsolidation) Name() string { return "multi" }

// ConsolidationType is "multi".
func (m *MultiNodeConsolidation) ConsolidationType() string { return "multi" }

// ComputeCommand runs the prefix search.
func (m *MultiNodeConsolidation) ComputeCommand(ctx context.Context, w *world, sim Simulator, budgets Budgets, candidates ...*Candidate) (Command, error) {
	cands := w.withinBudget(budgets, m.Reason(), sortForConsolidation(candidates))
	cands, _ = w.withinRolloutBudgets(cands)
	if n := m.opts.MaxMultiNodeCandidates; len(cands) > n {
		cands = cands[:n]
	}
	if len(cands) < 2 {
		return Command{}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, m.opts.MultiNodeTimeout)
	defer cancel()
	var best Command
	lo, hi := 2, len(cands)
	for lo <= hi {
		mid := (lo + hi) / 2
		cmd, _, err := m.evaluate(ctx, w, sim, m, cands[:mid])
		if errors.Is(err, context.DeadlineExceeded) {
			consolidationTimeouts.WithLabelValues("multi").Inc()
			log.FromContext(ctx).Info("multi-node consolidation timed out", "best", best.String())
			return best, nil
		}
		if err != nil {
			return Command{}, err
		}
		if !cmd.Empty() && len(cmd.Replacements) < mid && worthMerging(cmd) {
			best, lo = cmd, mid+1
		} else {
			hi = mid - 1
		}
	}
	return best, nil
}

// worthMerging reports whether a multi-node command is worth disrupting
// several nodes for: a delete always is; a replacement must save more than
// removing its priciest candidate alone could, else single-node
// consolidation does better with fewer disruptions.
func worthMerging(cmd Command) bool {
	if len(cmd.Replacements) == 0 {
		return true
	}
	priciest := 0.0
	for _, c := range cmd.Candidates {
		priciest = max(priciest, c.Price)
	}
	return cmd.Savings > priciest
}

// SingleNodeConsolidation tries each candidate alone, in consolidation
// order, and returns the first that can be deleted or replaced with
// cheaper capacity; every other one records why not. A pass simulates at
// most SingleNodeBatch candidates and the next pass continues after the
// last one, so a pass stays short at 1,000 nodes while every candidate is
// still visited in turn.
type SingleNodeConsolidation struct {
	consolidation
	// cursor is the last candidate evaluated; complete is true when the
	// last pass got through every candidate.
	cursor   string
	complete bool
}

// Name is "single".
func (s *SingleNodeConsolidation) Name() string { return "single" }

// ConsolidationType is "single".
func (s *SingleNodeConsolidation) ConsolidationType() string { return "single" }

// ComputeCommand tries candidates one by one until one succeeds, the batch
// is used up or the search times out.
func (s *SingleNodeConsolidation) ComputeCommand(ctx context.Context, w *world, sim Simulator, budgets Budgets, candidates ...*Candidate) (Command, error) {
	cands := rotateAfter(w.withinBudget(budgets, s.Reason(), sortForConsolidation(candidates)), s.cursor)
	batch := s.opts.SingleNodeBatch
	if batch <= 0 || batch > len(cands) {
		batch = len(cands)
	}
	s.complete = batch == len(cands)
	ctx, cancel := context.WithTimeout(ctx, s.opts.SingleNodeTimeout)
	defer cancel()
	for _, c := range cands[:batch] {
		s.cursor = c.Name()
		cmd, why, err := s.evaluate(ctx, w, sim, s, []*Candidate{c})
		if errors.Is(err, context.DeadlineExceeded) {
			consolidationTimeouts.WithLabelValues("single").Inc()
			s.complete = false
			return Command{}, nil
		}
		if err != nil {
			return Command{}, err
		}
		if !cmd.Empty() {
			return cmd, nil
		}
		w.record(c.Name(), why)
	}
	return Command{}, nil
}

// rotateAfter returns cands starting after the one named cursor (in order
// when it is absent).
func rotateAfter(cands []*Candidate, cursor string) []*Candidate {
	for i, c := range cands {
		if c.Name() == cursor {
			return append(append([]*Candidate(nil), cands[i+1:]...), cands[:i+1]...)
		}
	}
	return cands
}
