package disruption

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// TestZeroBudgetInAnActiveScheduleBlocksDisruption empties three nodes of a
// pool whose only budget is nodes "0" inside an always-active schedule:
// the nodes stay and each NodeClaim says the budget is why. Then the zero
// budget's window moves away (a minute on January 1st) beside a budget of
// one node: the nodes go, never more than one at a time.
func TestZeroBudgetInAnActiveScheduleBlocksDisruption(t *testing.T) {
	const name = "e2e-budgets"
	always, yearly := "* * * * *", "0 0 1 1 *"
	pool := test.MakeNodePool(name).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmpty).
		ConsolidateAfter(karpv1.MustParseNillableDuration("5s")).
		Budgets(karpv1.Budget{Nodes: "0", Schedule: &always, Duration: &metav1.Duration{Duration: time.Hour}}).Obj()
	f, _ := framework.RunPool(t, name, pool, framework.FastDisruptionArgs...)
	cl := f.Client

	deploy := framework.SpreadOverHosts(framework.Deployment(name, name, name, 3, "1"))
	framework.Create(t, cl, deploy)
	framework.Eventually(t, 4*time.Minute, func(ctx context.Context) (bool, string) {
		n := len(framework.AvailablePods(ctx, cl, name, map[string]string{"app": name}))
		return n == 3, fmt.Sprintf("%d of 3 pods available", n)
	})
	if err := cl.Delete(t.Context(), deploy); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 2*time.Minute, func(ctx context.Context) (bool, string) {
		claims := framework.PoolNodeClaims(ctx, cl, name)
		blocked := 0
		for _, nc := range claims {
			if c := nc.StatusConditions().Get(disruption.ConditionTypeDisruptionBlocked); c != nil && c.Reason == disruption.BlockedBudget {
				blocked++
			}
			if nc.DeletionTimestamp != nil {
				return false, "nodeclaim " + nc.Name + " is being deleted although the budget is 0"
			}
		}
		return len(claims) == 3 && blocked == 3, fmt.Sprintf("%d nodeclaims, %d blocked by the budget", len(claims), blocked)
	})
	for _, nc := range framework.PoolNodeClaims(t.Context(), cl, name) {
		t.Logf("nodeclaim %s: %s", nc.Name, nc.StatusConditions().Get(disruption.ConditionTypeDisruptionBlocked).Message)
	}

	s := framework.WatchDisrupting(t, f, name, nil)
	current := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	framework.Mutate(t, cl, current, func() {
		current.Spec.Disruption.Budgets = []karpv1.Budget{
			{Nodes: "0", Schedule: &yearly, Duration: &metav1.Duration{Duration: time.Minute}},
			{Nodes: "1"},
		}
	})
	framework.Eventually(t, 4*time.Minute, func(ctx context.Context) (bool, string) {
		n := len(framework.PoolNodeClaims(ctx, cl, name))
		return n == 0, fmt.Sprintf("%d nodeclaims left", n)
	})
	peak, _ := s.Stop()
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d NodeClaim events, at most %d node(s) disrupted at once", s.Events(), peak)
	if peak > 1 {
		t.Errorf("%d nodes were disrupted at once; the budget allows 1", peak)
	}
	if peak == 0 {
		t.Error("no node was ever seen being disrupted")
	}
}
