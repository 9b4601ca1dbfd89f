package disruption

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// TestStaticNodePoolScalesAndDriftsWithinItsBudget runs static NodePools
// (spec.replicas, feature gate StaticCapacity) under one controller, as
// parallel subtests, each on its own NodePool:
//   - "scales and drifts within its budget": 3 nodes whose empty nodes stay
//     through disruption passes (never consolidated); scaled to 5 and back
//     to 2 through the scale subresource (what kubectl scale does), it holds
//     that many nodes, each time ReplicasServed; then its template label
//     changes, and both nodes are replaced one at a time (budget nodes "1")
//     by nodes with the new label, ending with 2;
//   - "scale-down moves its pods" (scaleDownMovesPods);
//   - "drift and scale-up within its node limit" (driftAndScaleAtTheLimit);
//   - "goes with its NodePool" (goesWithItsNodePool).
//
// The last three follow upstream Karpenter's regression specs
// (docs/upstream-regression-coverage.md).
func TestStaticNodePoolScalesAndDriftsWithinItsBudget(t *testing.T) {
	const name = "e2e-static"
	pool := test.MakeNodePool(name).Replicas(3).
		Labels(map[string]string{"rollout": "v1"}).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		Budgets(karpv1.Budget{Nodes: "1"}).
		Obj()
	f, k := framework.RunPool(t, name, pool, append(slices.Clone(framework.FastDisruptionArgs), "--feature-gates=StaticCapacity=true")...)
	t.Run("scales and drifts within its budget", func(t *testing.T) {
		t.Parallel()
		scalesAndDrifts(t, f, k, name)
	})
	t.Run("scale-down moves its pods", func(t *testing.T) {
		t.Parallel()
		scaleDownMovesPods(t, f)
	})
	t.Run("drift and scale-up within its node limit", func(t *testing.T) {
		t.Parallel()
		driftAndScaleAtTheLimit(t, f)
	})
	t.Run("goes with its NodePool", func(t *testing.T) {
		t.Parallel()
		goesWithItsNodePool(t, f)
	})
}

func scalesAndDrifts(t *testing.T, f *framework.Framework, k *framework.Karp, name string) {
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

// staticPool creates a static NodePool of replicas on-demand nodes, with
// its namespace, for one subtest, and deletes them when it ends.
func staticPool(t *testing.T, f *framework.Framework, name string, replicas int64, mutate func(*test.NodePoolWrapper)) {
	t.Helper()
	w := test.MakeNodePool(name).Replicas(replicas).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand)
	if mutate != nil {
		mutate(w)
	}
	framework.CreatePool(t, f.Client, name, w.Obj())
	t.Cleanup(func() { framework.DeletePool(f.Client, name) })
}

// scaleDownMovesPods (upstream "should handle graceful pod eviction during
// scale down"): a Deployment of two pods spread over a static NodePool's
// two nodes (preferred anti-affinity); scaled to one node, the pod of the
// node that goes is evicted and its replacement runs on the node left, so
// both pods run again.
func scaleDownMovesPods(t *testing.T, f *framework.Framework) {
	const name = "e2e-static-drain"
	cl := f.Client
	// The cheapest type (t4g.nano) has no memory left for the pods.
	staticPool(t, f, name, 2, func(w *test.NodePoolWrapper) {
		w.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.large")
	})
	waitStaticNodes(t, cl, name, 2)
	dep := framework.Deployment("web", name, name, 2, "100m")
	dep.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname,
				LabelSelector: &metav1.LabelSelector{MatchLabels: dep.Spec.Selector.MatchLabels}}}}}}
	framework.Create(t, cl, dep)
	before := map[string]bool{}
	framework.Eventually(t, 2*time.Minute, func(ctx context.Context) (bool, string) {
		pods := framework.AvailablePods(ctx, cl, name, dep.Spec.Selector.MatchLabels)
		nodes := map[string]bool{}
		clear(before)
		for _, p := range pods {
			nodes[p.Spec.NodeName], before[p.Name] = true, true
		}
		return len(pods) == 2 && len(nodes) == 2, fmt.Sprintf("%d pods available on %d nodes, want 2 on 2", len(pods), len(nodes))
	})

	scaleStatic(t, cl, name, 1)
	left := waitStaticNodes(t, cl, name, 1)
	framework.Eventually(t, 2*time.Minute, func(ctx context.Context) (bool, string) {
		pods := framework.AvailablePods(ctx, cl, name, dep.Spec.Selector.MatchLabels)
		moved := 0
		var where []string
		for _, p := range pods {
			if !before[p.Name] {
				moved++
			}
			if !left[p.Spec.NodeName] {
				where = append(where, p.Name+" on "+p.Spec.NodeName)
			}
		}
		return len(pods) == 2 && moved == 1 && len(where) == 0,
			fmt.Sprintf("%d pods available (%d new), off the node left: %v; want 2, one of them new, all on %v", len(pods), moved, where, left)
	})
}

// poolCounter watches a NodePool's NodeClaims (deleting ones included):
// the most that existed at once, and those created after it started.
type poolCounter struct {
	mu      sync.Mutex
	live    map[string]bool
	peak    int
	created []string
}

func countPool(t *testing.T, f *framework.Framework, pool string) *poolCounter {
	t.Helper()
	c := &poolCounter{live: map[string]bool{}}
	list := &karpv1.NodeClaimList{}
	framework.ListAndWatch(t, f, list, func() {
		for _, nc := range list.Items {
			c.live[nc.Name] = true
		}
		c.peak = len(c.live)
	}, func(ev watch.Event) {
		nc, ok := ev.Object.(*karpv1.NodeClaim)
		if !ok {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		switch ev.Type {
		case watch.Deleted:
			delete(c.live, nc.Name)
		case watch.Added:
			c.created = append(c.created, nc.Name)
			c.live[nc.Name] = true
		default:
			c.live[nc.Name] = true
		}
		c.peak = max(c.peak, len(c.live))
	}, client.MatchingLabels{karpv1.NodePoolLabelKey: pool})
	return c
}

func (c *poolCounter) read() (peak int, created []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peak, slices.Clone(c.created)
}

// driftAndScaleAtTheLimit (upstream "should not go over limit during
// concurrent changes/executions"): a static NodePool of 3 nodes with
// limits.nodes 5 gets a new template and 4 replicas in one update; it
// never holds more than 5 NodeClaims (replacements ahead use the room the
// limit leaves; at the limit a drifted node goes first), and ends with 4
// nodes of the new template.
func driftAndScaleAtTheLimit(t *testing.T, f *framework.Framework) {
	const name = "e2e-static-limit"
	cl := f.Client
	staticPool(t, f, name, 3, func(w *test.NodePoolWrapper) {
		w.Labels(map[string]string{"rollout": "v1"}).Limits(test.ResourceList("nodes", "5"))
	})
	waitStaticNodes(t, cl, name, 3)
	c := countPool(t, f, name)
	current := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	framework.Mutate(t, cl, current, func() {
		current.Spec.Template.ObjectMeta.Labels["rollout"] = "v2"
		current.Spec.Replicas = ptr.To[int64](4)
	})
	waitStaticNodes(t, cl, name, 4)
	peak, created := c.read()
	t.Logf("%d NodeClaims created, at most %d at once", len(created), peak)
	if peak > 5 {
		t.Errorf("the NodePool held %d NodeClaims at once; limits.nodes is 5", peak)
	}
	if len(created) != 4 {
		t.Errorf("%d NodeClaims created, want 4 (one for the new replica, three replacements)", len(created))
	}
}

// goesWithItsNodePool (upstream "should handle NodePool deletion
// gracefully"): when a static NodePool is deleted, no NodeClaim is created
// for it any more and its nodes go (the NodeClaims' owner reference).
func goesWithItsNodePool(t *testing.T, f *framework.Framework) {
	const name = "e2e-static-delete"
	cl := f.Client
	staticPool(t, f, name, 3, nil)
	waitStaticNodes(t, cl, name, 3)
	c := countPool(t, f, name)
	if err := cl.Delete(t.Context(), &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 2*time.Minute, func(ctx context.Context) (bool, string) {
		claims := framework.PoolNodeClaims(ctx, cl, name)
		var nodes corev1.NodeList
		if err := cl.List(ctx, &nodes, client.MatchingLabels{karpv1.NodePoolLabelKey: name}); err != nil {
			return false, err.Error()
		}
		return len(claims) == 0 && len(nodes.Items) == 0,
			fmt.Sprintf("%d NodeClaims and %d Nodes left, want none once the NodePool is deleted", len(claims), len(nodes.Items))
	})
	if peak, created := c.read(); len(created) != 0 || peak > 3 {
		t.Errorf("NodeClaims created after the NodePool was deleted: %v (at most %d at once)", created, peak)
	}
}
