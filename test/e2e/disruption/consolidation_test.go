package disruption

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// TestNginxDemoConsolidatesWithoutBreakingItsPDB runs nginx-demo (two
// replicas spread over hosts, PDB minAvailable 50%) beside three 2-cpu
// filler pods on their own nodes, removes the filler and waits until karp
// consolidated the pool down to two nodes sized for nginx alone (the
// nodes sized for the filler are deleted or replaced by cheaper ones, so
// nginx's replicas are evicted under the PDB). A watcher
// sampling every 200 ms must never see fewer than one available replica,
// and no nginx pod may be force-deleted. The nodes karp keeps say why.
func TestNginxDemoConsolidatesWithoutBreakingItsPDB(t *testing.T) {
	const name = "e2e-consolidation"
	pool := test.MakeNodePool(name).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized).
		ConsolidateAfter(karpv1.MustParseNillableDuration("5s")).
		Budgets(karpv1.Budget{Nodes: "100%"}).Obj()
	f, _ := framework.RunPool(t, name, pool, framework.FastDisruptionArgs...)
	cl := f.Client

	framework.ApplyManifest(t, cl, fixtures.Example(t, "nginx-demo.yaml"), name, nil)
	framework.Create(t, cl, framework.SpreadOverHosts(framework.Deployment("filler", name, name, 3, "2")))
	nginx := map[string]string{"app": "nginx-demo"}
	framework.Eventually(t, 4*time.Minute, func(ctx context.Context) (bool, string) {
		n, fill := len(framework.AvailablePods(ctx, cl, name, nginx)), len(framework.AvailablePods(ctx, cl, name, map[string]string{"app": "filler"}))
		return n == 2 && fill == 3, fmt.Sprintf("%d of 2 nginx and %d of 3 filler pods available", n, fill)
	})
	original := map[string]bool{}
	for _, nc := range framework.PoolNodeClaims(t.Context(), cl, name) {
		original[nc.Name] = true
	}
	t.Logf("%d nodes before the filler goes", len(original))

	w := framework.SampleAvailable(t, cl, name, nginx)
	if err := cl.DeleteAllOf(t.Context(), &corev1.Pod{}, client.InNamespace(name), client.MatchingLabels{"app": "filler"}); err != nil {
		t.Fatal(err)
	}
	filler := framework.Deployment("filler", name, name, 0, "2")
	if err := cl.Delete(t.Context(), filler); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 5*time.Minute, func(ctx context.Context) (bool, string) {
		claims := framework.PoolNodeClaims(ctx, cl, name)
		left := 0
		for _, nc := range claims {
			if original[nc.Name] {
				left++
			}
		}
		avail := len(framework.AvailablePods(ctx, cl, name, nginx))
		return len(claims) <= 2 && left == 0 && avail == 2, fmt.Sprintf(
			"%d nodeclaims (want at most 2), %d sized for the filler left, %d of 2 nginx available", len(claims), left, avail)
	})
	samples, minAvail := w.Stop()
	t.Logf("%d samples, at least %d nginx replica(s) available in each", samples, minAvail)
	if samples < 10 || minAvail < 1 {
		t.Errorf("%d samples, minimum %d available nginx replicas; the PDB requires 1", samples, minAvail)
	}
	var events eventsv1.EventList
	if err := cl.List(t.Context(), &events, client.InNamespace(name)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == "Disrupted" && e.Regarding.Kind == "Pod" {
			t.Errorf("pod %s was force-deleted: %s", e.Regarding.Name, e.Note)
		}
	}
	// The nodes that stay say why.
	framework.Eventually(t, time.Minute, func(ctx context.Context) (bool, string) {
		for _, nc := range framework.PoolNodeClaims(ctx, cl, name) {
			if c := nc.StatusConditions().Get(disruption.ConditionTypeDisruptionBlocked); c != nil && c.Message != "" {
				t.Logf("nodeclaim %s stays: %s: %s", nc.Name, c.Reason, c.Message)
				return true, ""
			}
		}
		return false, "no remaining nodeclaim carries a DisruptionBlocked reason"
	})
}
