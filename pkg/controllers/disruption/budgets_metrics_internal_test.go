package disruption

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/state"
)

func TestBudgetsPublishTheNodesConsumingThem(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	pools := []*karpv1.NodePool{poolWithBudgets("consuming", karpv1.Budget{Nodes: "100%"})}
	gauge := func() float64 {
		return testutil.ToFloat64(nodesConsumingBudgets.WithLabelValues("consuming", reasonValue(karpv1.DisruptionReasonDrifted)))
	}
	c := &Controller{}

	c.budgets(t.Context(), pureWorld(now, pools,
		pureStateNode("a", "consuming", stateNodeOpts{}),
		pureStateNode("b", "consuming", stateNodeOpts{})), karpv1.DisruptionReasonDrifted)
	if got := gauge(); got != 0 {
		t.Fatalf("no node disrupting: nodes_consuming_budgets = %v, want 0", got)
	}

	c.budgets(t.Context(), pureWorld(now, pools, []*state.StateNode{
		pureStateNode("a", "consuming", stateNodeOpts{marked: true}),
		pureStateNode("b", "consuming", stateNodeOpts{notReady: true}),
		pureStateNode("c", "consuming", stateNodeOpts{}),
		// Not a share of the budget: neither consumes it.
		pureStateNode("launching", "consuming", stateNodeOpts{uninitialized: true, notReady: true}),
	}...), karpv1.DisruptionReasonDrifted)
	if got := gauge(); got != 2 {
		t.Fatalf("one marked, one NotReady: nodes_consuming_budgets = %v, want 2", got)
	}
}
