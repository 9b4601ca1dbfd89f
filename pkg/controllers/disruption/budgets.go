package disruption

import (
	"errors"
	"fmt"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// budgetsFor returns, per NodePool of the pass, how many more nodes may be
// disrupted for reason: the budgets' allowance over the pool's initialized
// nodes (those whose instance is not already terminating), minus the
// nodes already being disrupted or NotReady, never below zero. It is pure:
// a NodePool whose budgets cannot be evaluated keeps the allowance
// GetAllowedDisruptionsByReason returned with the error, which comes back
// (naming the NodePool) for the caller to log.
func budgetsFor(w *world, reason karpv1.DisruptionReason) (Budgets, error) {
	total, busy := budgetCounts(w)
	out := Budgets{}
	var errs []error
	for name, np := range w.nodePools {
		allowed, err := np.GetAllowedDisruptionsByReason(w.now, total[name], reason)
		if err != nil {
			errs = append(errs, fmt.Errorf("nodepool %s: %w", name, err))
		}
		out[name] = max(0, allowed-busy[name])
	}
	return out, errors.Join(errs...)
}

// budgetCounts counts, per NodePool, the nodes budgets are a share of
// (initialized, instance not terminating) and, of those, the ones
// consuming budget (being disrupted or NotReady).
func budgetCounts(w *world) (total, busy map[string]int) {
	total, busy = map[string]int{}, map[string]int{}
	for _, sn := range w.stateNodes {
		pool := sn.NodePool()
		if !sn.Managed() || pool == "" || !sn.Initialized() {
			continue
		}
		if sn.NodeClaim.StatusConditions().IsTrue(karpv1.ConditionTypeInstanceTerminating) {
			continue
		}
		total[pool]++
		if sn.MarkedForDeletion || !nodeReady(sn) {
			busy[pool]++
		}
	}
	return total, busy
}

func nodeReady(sn *state.StateNode) bool {
	if sn.Node == nil {
		return false
	}
	for _, c := range sn.Node.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

// budgetBlocker says which budget stops a node of the pool.
func budgetBlocker(np *karpv1.NodePool, reason karpv1.DisruptionReason) blocker {
	return blocker{BlockedBudget, fmt.Sprintf("NodePool %s's disruption budget allows no more %s disruptions now", np.Name, reason)}
}

// withinBudget splits the candidates, in order, into those the budgets
// allow, counting each one against its pool, and those over budget.
func withinBudget(budgets Budgets, cands []*Candidate) (allowed, over []*Candidate) {
	left := Budgets{}
	for k, v := range budgets {
		left[k] = v
	}
	for _, c := range cands {
		if left[c.NodePool.Name] <= 0 {
			over = append(over, c)
			continue
		}
		left[c.NodePool.Name]--
		allowed = append(allowed, c)
	}
	return allowed, over
}

// withinBudget keeps the candidates the budgets allow (see withinBudget)
// and records the budget as the blocker of the others.
func (w *world) withinBudget(budgets Budgets, reason karpv1.DisruptionReason, cands []*Candidate) []*Candidate {
	allowed, over := withinBudget(budgets, cands)
	for _, c := range over {
		w.record(c.Name(), budgetBlocker(c.NodePool, reason))
	}
	return allowed
}
