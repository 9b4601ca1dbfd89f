package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
)

// NginxDemoPool is the NodePool of the nginx-demo consolidation scenario:
// on-demand, consolidating empty or underutilized nodes after 5s, every
// node disruptable at once.
func NginxDemoPool(name string) *karpv1.NodePool {
	return test.MakeNodePool(name).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized).
		ConsolidateAfter(karpv1.MustParseNillableDuration("5s")).
		Budgets(karpv1.Budget{Nodes: "100%"}).Obj()
}

// ConsolidateNginxDemo runs the nginx-demo consolidation scenario in the
// namespace of the NodePool name (NginxDemoPool, karp running): nginx-demo
// (two replicas spread over hosts, PDB minAvailable 50%) beside three
// 2-cpu filler pods on their own nodes. It removes the filler and waits
// until karp consolidated the pool to at most two nodes, none of those
// sized for the filler, with both nginx replicas available; a sample
// every 200 ms meanwhile must always see one available.
func ConsolidateNginxDemo(t *testing.T, cl client.Client, name string) {
	t.Helper()
	ApplyManifest(t, cl, fixtures.Example(t, "nginx-demo.yaml"), name, nil)
	Create(t, cl, SpreadOverHosts(Deployment("filler", name, name, 3, "2")))
	nginx := map[string]string{"app": "nginx-demo"}
	Eventually(t, 4*time.Minute, func(ctx context.Context) (bool, string) {
		n, fill := len(AvailablePods(ctx, cl, name, nginx)), len(AvailablePods(ctx, cl, name, map[string]string{"app": "filler"}))
		return n == 2 && fill == 3, fmt.Sprintf("%d of 2 nginx and %d of 3 filler pods available", n, fill)
	})
	original := map[string]bool{}
	for _, nc := range PoolNodeClaims(t.Context(), cl, name) {
		original[nc.Name] = true
	}
	t.Logf("%d nodes before the filler goes", len(original))

	w := SampleAvailable(t, cl, name, nginx)
	if err := cl.DeleteAllOf(t.Context(), &corev1.Pod{}, client.InNamespace(name), client.MatchingLabels{"app": "filler"}); err != nil {
		t.Fatal(err)
	}
	if err := cl.Delete(t.Context(), Deployment("filler", name, name, 0, "2")); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 5*time.Minute, func(ctx context.Context) (bool, string) {
		claims := PoolNodeClaims(ctx, cl, name)
		left := 0
		for _, nc := range claims {
			if original[nc.Name] {
				left++
			}
		}
		avail := len(AvailablePods(ctx, cl, name, nginx))
		return len(claims) <= 2 && left == 0 && avail == 2, fmt.Sprintf(
			"%d nodeclaims (want at most 2), %d sized for the filler left, %d of 2 nginx available", len(claims), left, avail)
	})
	samples, fewest := w.Stop()
	t.Logf("%d samples, at least %d nginx replica(s) available in each", samples, fewest)
	if samples < 10 || fewest < 1 {
		t.Errorf("%d samples, at least %d nginx replicas available in each; the PDB requires 1", samples, fewest)
	}
}
