package disruption

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// TestStaticNodePoolScalesAndDriftsWithinItsBudget runs a static NodePool
// (spec.replicas, feature gate StaticCapacity) of 3 nodes: its empty nodes
// stay through disruption passes (never consolidated); scaled to 5 and
// back to 2 through the scale subresource (what kubectl scale does), it
// holds that many nodes, each time ReplicasServed; then its template label
// changes, and both nodes are replaced one at a time (budget nodes "1") by
// nodes with the new label, ending with 2.
func TestStaticNodePoolScalesAndDriftsWithinItsBudget(t *testing.T) {
	const name = "e2e-static"
	pool := test.MakeNodePool(name).Replicas(3).
		Labels(map[string]string{"rollout": "v1"}).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		Budgets(karpv1.Budget{Nodes: "1"}).
		Obj()
	f, k := framework.RunPool(t, name, pool, append(slices.Clone(framework.FastDisruptionArgs), "--feature-gates=StaticCapacity=true")...)
	cl := f.Client

	// 1. Three nodes, served; empty as they are, consolidation leaves them.
	first := waitStaticNodes(t, cl, name, 3)
	k.HoldsFor(t, framework.Passes{"disruption": 5}, 3*time.Minute, func(ctx context.Context) string {
		claims := framework.PoolNodeClaims(ctx, cl, name)
		for _, nc := range claims {
			if !first[nc.Name] || nc.DeletionTimestamp != nil {
				return "the static NodePool's nodes changed without a spec change: NodeClaim " + nc.Name
			}
		}
		if len(claims) != 3 {
			return fmt.Sprintf("%d NodeClaims, want 3", len(claims))
		}
		return ""
	})

	// 2. Scaled up and down through the scale subresource.
	scaleStatic(t, cl, name, 5)
	waitStaticNodes(t, cl, name, 5)
	// The scale subresource reads status.nodes, which the counter writes.
	framework.Eventually(t, time.Minute, func(context.Context) (bool, string) {
		got := readScale(t, cl, name)
		return got.Spec.Replicas == 5 && got.Status.Replicas == 5,
			fmt.Sprintf("scale: spec %d, status %d; want 5 and 5", got.Spec.Replicas, got.Status.Replicas)
	})
	scaleStatic(t, cl, name, 2)
	original := waitStaticNodes(t, cl, name, 2)

	// 3. Drift within the budget: one node at a time, ending with two new.
	s := framework.WatchDisrupting(t, f, name, original)
	current := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	framework.Mutate(t, cl, current, func() { current.Spec.Template.ObjectMeta.Labels["rollout"] = "v2" })
	replaced := waitStaticNodes(t, cl, name, 2)
	for n := range replaced {
		if original[n] {
			t.Errorf("NodeClaim %s was not replaced", n)
		}
	}
	for _, nc := range framework.PoolNodeClaims(t.Context(), cl, name) {
		if nc.Labels["rollout"] != "v2" {
			t.Errorf("NodeClaim %s has rollout=%q, want v2", nc.Name, nc.Labels["rollout"])
		}
	}
	peak, seen := s.Stop()
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d NodeClaim events, at most %d original node(s) disrupted at once, %d seen disrupted", s.Events(), peak, seen)
	if seen != 2 {
		t.Errorf("%d original nodes were seen being disrupted, want 2", seen)
	}
	if peak > 1 {
		t.Errorf("%d original nodes were disrupted at once; the budget allows 1", peak)
	}
}

// waitStaticNodes waits up to four minutes until the NodePool has exactly
// want NodeClaims, none deleting, every one initialized with a Ready Node,
// the template's rollout label on each, and ReplicasServed True; it
// returns their names.
func waitStaticNodes(t *testing.T, cl client.Client, pool string, want int) map[string]bool {
	t.Helper()
	var names map[string]bool
	framework.Eventually(t, 4*time.Minute, func(ctx context.Context) (bool, string) {
		np := &karpv1.NodePool{}
		if err := cl.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
			return false, err.Error()
		}
		claims := framework.PoolNodeClaims(ctx, cl, pool)
		names = map[string]bool{}
		var problems []string
		for _, nc := range claims {
			names[nc.Name] = true
			switch {
			case nc.DeletionTimestamp != nil:
				problems = append(problems, nc.Name+" deleting")
			case !nc.StatusConditions().IsTrue(karpv1.ConditionTypeInitialized):
				problems = append(problems, nc.Name+" not initialized")
			case nc.Labels["rollout"] != np.Spec.Template.ObjectMeta.Labels["rollout"]:
				problems = append(problems, nc.Name+" of an older template")
			}
		}
		served := np.StatusConditions().Get(karpv1.ConditionTypeReplicasServed)
		if served == nil || served.Status != metav1.ConditionTrue {
			problems = append(problems, fmt.Sprintf("ReplicasServed %+v", served))
		}
		nodes := 0
		var list corev1.NodeList
		if err := cl.List(ctx, &list, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}); err == nil {
			for i := range list.Items {
				if list.Items[i].DeletionTimestamp == nil && framework.NodeReady(&list.Items[i]) {
					nodes++
				}
			}
		}
		ok := len(claims) == want && nodes == want && len(problems) == 0
		return ok, fmt.Sprintf("%d NodeClaims and %d Ready nodes, want %d; %s", len(claims), nodes, want, strings.Join(problems, ", "))
	})
	return names
}

// scaleStatic sets the NodePool's replicas through its scale subresource,
// as `kubectl scale nodepool NAME --replicas=N` does.
func scaleStatic(t *testing.T, cl client.Client, pool string, replicas int32) {
	t.Helper()
	scale := readScale(t, cl, pool)
	scale.Spec.Replicas = replicas
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}}
	if err := cl.SubResource("scale").Update(t.Context(), np, client.WithSubResourceBody(scale)); err != nil {
		t.Fatalf("scaling NodePool %s to %d: %v", pool, replicas, err)
	}
}

func readScale(t *testing.T, cl client.Client, pool string) *autoscalingv1.Scale {
	t.Helper()
	scale := &autoscalingv1.Scale{}
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}}
	if err := cl.SubResource("scale").Get(t.Context(), np, scale); err != nil {
		t.Fatalf("reading the scale of NodePool %s: %v", pool, err)
	}
	return scale
}
