package disruption

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// buildBudgets returns, per NodePool, how many more nodes may be disrupted
// for reason: the budgets' allowance over the pool's initialized nodes
// (those whose instance is not already terminating), minus the nodes
// already being disrupted or NotReady, never below zero.
func buildBudgets(ctx context.Context, w *world, reason karpv1.DisruptionReason) Budgets {
	total := map[string]int{}
	busy := map[string]int{}
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
	out := Budgets{}
	for name, np := range w.nodePools {
		allowed, err := np.GetAllowedDisruptionsByReason(w.now, total[name], reason)
		if err != nil {
			log.FromContext(ctx).Error(err, "evaluating disruption budgets", "NodePool", name)
		}
		out[name] = max(0, allowed-busy[name])
		allowedDisruptions.WithLabelValues(name, reasonValue(reason)).Set(float64(out[name]))
	}
	return out
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

// budgetMessage says which budget stops a node of the pool.
func budgetMessage(np *karpv1.NodePool, reason karpv1.DisruptionReason) string {
	return fmt.Sprintf("NodePool %s's disruption budget allows no more %s disruptions now", np.Name, reason)
}

// withinBudget keeps the candidates, in order, that the budgets allow,
// counting each one against its pool; the others are recorded as blocked.
func withinBudget(w *world, budgets Budgets, reason karpv1.DisruptionReason, cands []*Candidate) []*Candidate {
	left := Budgets{}
	for k, v := range budgets {
		left[k] = v
	}
	var out []*Candidate
	for _, c := range cands {
		if left[c.NodePool.Name] <= 0 {
			w.block(c.Name(), BlockedBudget, "%s", budgetMessage(c.NodePool, reason))
			continue
		}
		left[c.NodePool.Name]--
		out = append(out, c)
	}
	return out
}
