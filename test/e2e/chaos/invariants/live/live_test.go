// Package live runs the invariant monitors against the full local
// cluster while karp disrupts a pool correctly: the real disruption
// controller writes the budget's status, kwok removes evicted pods, and
// karp drains and deletes the nodes. The monitors must count the
// evictions and stay quiet.
package live

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/chaos/invariants"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// TestMonitorsStayQuietOnADriftWithinTheBudget drifts three nodes, each
// running one pod of a Deployment whose budget allows one unavailable
// pod, and checks the monitor saw every pod evicted, no violation, and a
// settled cluster afterwards.
func TestMonitorsStayQuietOnADriftWithinTheBudget(t *testing.T) {
	const name = "inv-live"
	f, _, original := poolOfThree(t, name)
	cl := f.Client
	ctx := t.Context()

	mon, err := invariants.Start(ctx, f.Config, invariants.Options{})
	if err != nil {
		t.Fatal(err)
	}
	drift(t, cl, name)
	waitReplaced(t, cl, name, original)
	report := mon.Stop()
	found, err := invariants.WaitSettled(ctx, cl, invariants.KWOKInstances{Client: cl},
		invariants.SettleOptions{Namespaces: []string{name}}, time.Second, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	report.Add(found...)
	t.Logf("monitor report: %s", report.String())

	if report.Evictions < 3 {
		t.Errorf("the monitor counted %d evictions; karp drained three nodes with a pod each", report.Evictions)
	}
	if got := report.CountCause(invariants.CauseEvicted); got != report.Evictions {
		t.Errorf("%d evicted disruptions for %d evictions", got, report.Evictions)
	}
	if len(report.Violations) != 0 || report.Unobserved != 0 {
		t.Errorf("a drift within the budget: %d violations, %d unobserved pods", len(report.Violations), report.Unobserved)
	}

	// Then a node is yanked from under karp while the budget allows no
	// disruption: deleted (karp's drain is refused by the budget), then
	// its finalizer removed. The monitor must see the pod lost with it and
	// the budget broken.
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: name}}
	framework.Mutate(t, cl, pdb, func() { pdb.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(0)) })
	framework.Eventually(t, time.Minute, func(ctx context.Context) (bool, string) {
		got := &policyv1.PodDisruptionBudget{}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(pdb), got); err != nil {
			return false, err.Error()
		}
		return got.Status.ObservedGeneration >= got.Generation && got.Status.DesiredHealthy == 3,
			fmt.Sprintf("budget status: observed generation %d of %d, desired healthy %d", got.Status.ObservedGeneration, got.Generation, got.Status.DesiredHealthy)
	})
	mon, err = invariants.Start(ctx, f.Config, invariants.Options{})
	if err != nil {
		t.Fatal(err)
	}
	victim := framework.AvailablePods(ctx, cl, name, nil)[0]
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: victim.Spec.NodeName}}
	if err := cl.Delete(ctx, node); err != nil {
		t.Fatal(err)
	}
	framework.Mutate(t, cl, node, func() { node.Finalizers = nil })
	framework.Eventually(t, time.Minute, func(context.Context) (bool, string) {
		r := mon.Report()
		return r.Count(invariants.KindPDBViolation) > 0, "waiting for the PDB violation: " + r.String()
	})
	yanked := mon.Stop()
	t.Logf("monitor report: %s", yanked.String())
	want := fmt.Sprintf("%s/%s %s", name, victim.Name, invariants.CauseLostWithNode)
	if len(yanked.Disruptions) != 1 || fmt.Sprintf("%s %s", yanked.Disruptions[0].Pod, yanked.Disruptions[0].Cause) != want {
		t.Errorf("disruptions %+v, want only %s", yanked.Disruptions, want)
	}
}

// poolOfThree starts karp on a pool whose template can drift (label
// rollout=v1), one node disrupted at a time, and runs a Deployment of
// three pods, one per node, under a budget of one unavailable pod. It
// returns the controller and the NodeClaims the pods run on.
func poolOfThree(t *testing.T, name string) (*framework.Framework, *framework.Karp, map[string]bool) {
	t.Helper()
	pool := test.MakeNodePool(name).
		Labels(map[string]string{"rollout": "v1"}).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmpty).
		ConsolidateAfter(karpv1.MustParseNillableDuration(karpv1.Never)).
		Budgets(karpv1.Budget{Nodes: "1"}).
		Obj()
	f, k := framework.RunPool(t, name, pool, framework.FastDisruptionArgs...)
	cl := f.Client
	framework.Create(t, cl, framework.SpreadOverHosts(framework.Deployment(name, name, name, 3, "500m")))
	framework.Create(t, cl, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}},
	})
	framework.Eventually(t, 3*time.Minute, func(ctx context.Context) (bool, string) {
		n := len(framework.AvailablePods(ctx, cl, name, nil))
		return n == 3, fmt.Sprintf("%d of 3 pods running", n)
	})
	original := map[string]bool{}
	for _, nc := range framework.PoolNodeClaims(t.Context(), cl, name) {
		original[nc.Name] = true
	}
	return f, k, original
}

// drift changes the pool's template label: every node of it drifts.
func drift(t *testing.T, cl client.Client, name string) {
	t.Helper()
	current := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	framework.Mutate(t, cl, current, func() { current.Spec.Template.ObjectMeta.Labels["rollout"] = "v2" })
}

// waitReplaced waits until none of the original NodeClaims is left and
// the three pods run.
func waitReplaced(t *testing.T, cl client.Client, name string, original map[string]bool) {
	t.Helper()
	framework.Eventually(t, 6*time.Minute, func(ctx context.Context) (bool, string) {
		left := 0
		for _, nc := range framework.PoolNodeClaims(ctx, cl, name) {
			if original[nc.Name] {
				left++
			}
		}
		running := len(framework.AvailablePods(ctx, cl, name, nil))
		return left == 0 && running == 3, fmt.Sprintf("%d original NodeClaims left, %d of 3 pods running", left, running)
	})
}
