package provisioning_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// pool is a NodePool for one test: no consolidation (so the nodes a test
// counts stay), linux/amd64, and the given extra requirements.
func pool(name string) *test.NodePoolWrapper {
	return test.MakeNodePool(name).ConsolidateAfter(karpv1.NillableDuration{}).
		Requirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, "linux").
		Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64")
}

// onPool pins pods to one NodePool.
func onPool(name string) map[string]string { return map[string]string{karpv1.NodePoolLabelKey: name} }

// ensureNodeClass makes sure the KWOKNodeClass "default" exists (the seed
// scenario applies it; other tests may run alone).
func ensureNodeClass(t *testing.T) {
	t.Helper()
	nc := test.MakeKWOKNodeClass("default").Obj()
	err := framework.Current(t).Client.Create(t.Context(), nc)
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	framework.Eventually(t, scaleTimeout, func(ctx context.Context) (bool, string) {
		got := &kwokv1alpha1.KWOKNodeClass{}
		if err := framework.Current(t).Client.Get(ctx, client.ObjectKey{Name: "default"}, got); err != nil {
			return false, err.Error()
		}
		return got.StatusConditions().IsTrue(kwokv1alpha1.ConditionTypeReady), "KWOKNodeClass default not Ready"
	})
}

func TestLimitsStopAndResume(t *testing.T) {
	ensureController(t)
	ensureNodeClass(t)
	// c5.2xlarge: 8 cpu each, so a second node would take the pool to 16.
	nodePool := pool("e2e-limited").Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.2xlarge").
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		Limits(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}).Obj()
	create(t, nodePool, deployment("e2e-limited", 10, "1", "1Gi", onPool("e2e-limited")))

	// 1. One node, seven pods; the rest wait and say why.
	framework.Eventually(t, scaleTimeout, func(context.Context) (bool, string) {
		msgs := podEventMessages(t, "e2e-limited", "FailedScheduling")
		for _, m := range msgs {
			if strings.Contains(m, "limit cpu") {
				return len(nodesOf(t, "e2e-limited")) == 1, fmt.Sprintf("%d nodes", len(nodesOf(t, "e2e-limited")))
			}
		}
		return false, fmt.Sprintf("no FailedScheduling event mentions the cpu limit; events: %q", msgs)
	})
	framework.Eventually(t, scaleTimeout, func(ctx context.Context) (bool, string) {
		got := &karpv1.NodePool{}
		if err := framework.Current(t).Client.Get(ctx, client.ObjectKeyFromObject(nodePool), got); err != nil {
			return false, err.Error()
		}
		cpu := got.Status.Resources[corev1.ResourceCPU]
		nodes := nodesOf(t, "e2e-limited")
		if len(nodes) != 1 {
			return false, fmt.Sprintf("%d nodes", len(nodes))
		}
		want := nodes[0].Status.Capacity[corev1.ResourceCPU]
		return cpu.Cmp(want) == 0 && cpu.Cmp(resource.MustParse("10")) <= 0,
			fmt.Sprintf("status.resources.cpu %s, want the one node's %s, within the limit of 10", cpu.String(), want.String())
	})
	if n := len(nodeClaimsOf(t, "e2e-limited")); n != 1 {
		t.Fatalf("%d NodeClaims under a 10-cpu limit with 8-cpu types, want 1", n)
	}

	// 2. Raising the limit lets the rest run.
	got := nodePool.DeepCopy()
	framework.Mutate(t, framework.Current(t).Client, got, func() {
		got.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("20")}
	})
	waitRunning(t, "default", "e2e-limited", 10)
	if n := len(nodesOf(t, "e2e-limited")); n != 2 {
		t.Errorf("%d nodes after raising the limit to 20 cpu, want 2", n)
	}
}

func TestWeightedNodePoolsPickTheHeavier(t *testing.T) {
	ensureController(t)
	ensureNodeClass(t)
	shared := map[string]string{"e2e-weighted": "yes"}
	heavy := pool("e2e-heavy").Weight(50).Labels(shared).Obj()
	// The light pool offers cheaper spot capacity, yet loses on weight.
	light := pool("e2e-light").Weight(10).Labels(shared).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand).Obj()
	heavy.Spec.Template.Spec.Requirements = append(heavy.Spec.Template.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
		Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}})
	create(t, heavy, light, deployment("e2e-weighted", 3, "500m", "512Mi", shared))
	for _, pod := range waitRunning(t, "default", "e2e-weighted", 3) {
		if p := nodeByName(t, pod.Spec.NodeName).Labels[karpv1.NodePoolLabelKey]; p != "e2e-heavy" {
			t.Errorf("pod %s on NodePool %q, want e2e-heavy (weight 50 over 10)", pod.Name, p)
		}
	}
	if n := len(nodeClaimsOf(t, "e2e-light")); n != 0 {
		t.Errorf("the lighter NodePool launched %d NodeClaims", n)
	}
}

func TestSpotWhenAllowedAndCheaper(t *testing.T) {
	ensureController(t)
	ensureNodeClass(t)
	nodePool := pool("e2e-spot").
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand).
		Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large", "m5.xlarge", "c5.xlarge").Obj()
	create(t, nodePool, deployment("e2e-spot", 2, "1", "1Gi", onPool("e2e-spot")))
	waitRunning(t, "default", "e2e-spot", 2)
	for _, node := range nodesOf(t, "e2e-spot") {
		if ct := node.Labels[karpv1.CapacityTypeLabelKey]; ct != karpv1.CapacityTypeSpot {
			t.Errorf("node %s (%s) is %s, want spot (allowed and cheaper)", node.Name, node.Labels[corev1.LabelInstanceTypeStable], ct)
		}
	}
}

func TestInsufficientSpotCapacityFallsBack(t *testing.T) {
	ensureController(t)
	ensureNodeClass(t)
	// The controller runs with --kwok-insufficient-capacity=iceOffering:
	// the pool's only spot offering is out of capacity.
	nodePool := pool("e2e-ice").
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand).
		Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.2xlarge").
		Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-east-1b").Obj()
	claims, instances := recordNodeClaims(t, "e2e-ice"), recordNodes(t, "e2e-ice")
	create(t, nodePool, deployment("e2e-ice", 1, "1", "1Gi", onPool("e2e-ice")))
	pods := waitRunning(t, "default", "e2e-ice", 1)
	node := nodeByName(t, pods[0].Spec.NodeName)
	if ct := node.Labels[karpv1.CapacityTypeLabelKey]; ct != karpv1.CapacityTypeOnDemand {
		t.Errorf("node %s is %s, want the on-demand fallback", node.Name, ct)
	}
	// One refused launch, then the fallback: at most two NodeClaims.
	if names := claims(); len(names) > 2 {
		t.Errorf("%d NodeClaims before the fallback landed (%v), want at most 2 (one retry)", len(names), names)
	}
	// The refused launch left no instance behind, not even for a while.
	if names := instances(); len(names) != 1 {
		t.Errorf("instances (Nodes) seen: %v, want only the fallback's", names)
	}
	expectOneToOne(t)
}

// recordNodeClaims watches NodeClaims of a pool from now on and returns a
// func listing every name seen.
func recordNodeClaims(t *testing.T, pool string) func() []string {
	return record(t, &karpv1.NodeClaimList{}, pool)
}

// recordNodes is recordNodeClaims for Nodes (the kwok provider's instances).
func recordNodes(t *testing.T, pool string) func() []string {
	return record(t, &corev1.NodeList{}, pool)
}

func record(t *testing.T, list client.ObjectList, pool string) func() []string {
	t.Helper()
	wc, err := client.NewWithWatch(framework.Current(t).Config, client.Options{Scheme: framework.Current(t).Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(t.Context(), list, client.MatchingLabels{karpv1.NodePoolLabelKey: pool})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	go func() {
		for ev := range w.ResultChan() {
			if o, ok := ev.Object.(client.Object); ok && ev.Type != watch.Error {
				mu.Lock()
				seen[o.GetName()] = true
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(w.Stop)
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := make([]string, 0, len(seen))
		for n := range seen {
			out = append(out, n)
		}
		return out
	}
}
