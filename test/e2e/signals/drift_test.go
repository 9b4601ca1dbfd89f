package signals

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// TestTemplateLabelChangeDriftsEveryNodeWithinTheBudget runs three pods on
// three nodes, changes the NodePool's template labels, and samples the
// cluster until every node was replaced by one with the new label: at no
// sample are more original nodes being disrupted than the budget's one.
func TestTemplateLabelChangeDriftsEveryNodeWithinTheBudget(t *testing.T) {
	const name = "e2e-drift"
	pool := test.MakeNodePool(name).
		Labels(map[string]string{"rollout": "v1"}).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmpty).
		ConsolidateAfter(karpv1.MustParseNillableDuration(karpv1.Never)).
		Budgets(karpv1.Budget{Nodes: "1"}).
		Obj()
	f, _ := framework.RunPool(t, name, pool, framework.FastDisruptionArgs...)
	cl := f.Client
	deploy := framework.SpreadOverHosts(framework.Deployment(name, name, name, 3, "500m"))
	framework.Create(t, cl, deploy)
	original := framework.WaitRunningClaims(t, cl, name, 3)
	if len(original) != 3 {
		t.Fatalf("pods run under %d NodeClaims, want 3", len(original))
	}

	s := framework.WatchDisrupting(t, f, name, original)
	current := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	framework.Mutate(t, cl, current, func() { current.Spec.Template.ObjectMeta.Labels["rollout"] = "v2" })

	framework.Eventually(t, 6*time.Minute, func(ctx context.Context) (bool, string) {
		claims := framework.PoolNodeClaimsByName(ctx, cl, name)
		left, relabelled := 0, 0
		for n, nc := range claims {
			if original[n] {
				left++
			} else if nc.Labels["rollout"] == "v2" {
				relabelled++
			}
		}
		running := len(framework.AvailablePods(ctx, cl, name, nil))
		return left == 0 && relabelled >= 3 && running == 3,
			fmt.Sprintf("%d original NodeClaims left, %d with the new label, %d of 3 pods running", left, relabelled, running)
	})
	peak, seen := s.Stop()
	if seen == 0 {
		t.Error("no original node was ever seen being disrupted")
	}
	if peak > 1 {
		t.Errorf("%d original nodes were disrupted at once; the budget allows 1", peak)
	}
}
