package disruption

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// TestDaemonSetThatDoesNotFitGetsItsNodesReplaced fills two 2-cpu nodes
// with one 1-cpu pod each, then applies daemonset-all-nodes.yaml with a
// 1200m request: its pods cannot fit, so karp replaces each node by one
// that fits the workload pod plus the DaemonSet. Sampling every 200 ms,
// at least one workload replica runs throughout; at the end every node
// of the pool runs the DaemonSet pod and no pod is pending.
func TestDaemonSetThatDoesNotFitGetsItsNodesReplaced(t *testing.T) {
	const name = "e2e-daemonset"
	pool := test.MakeNodePool(name).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		Requirement(kwokv1alpha1.InstanceCPULabelKey, corev1.NodeSelectorOpIn, "2", "4", "8").
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmpty).
		ConsolidateAfter(karpv1.MustParseNillableDuration(karpv1.Never)).
		Budgets(karpv1.Budget{Nodes: "1"}).
		Obj()
	f, _ := framework.RunPool(t, name, pool, framework.FastDisruptionArgs...)
	cl := f.Client
	deploy := framework.SpreadOverHosts(framework.Deployment(name, name, name, 2, "1"))
	framework.Create(t, cl, deploy)
	original := framework.WaitRunningClaims(t, cl, name, 2)
	for n := range original {
		if cpu := framework.PoolNodeClaimsByName(t.Context(), cl, name)[n].Labels[kwokv1alpha1.InstanceCPULabelKey]; cpu != "2" {
			t.Fatalf("NodeClaim %s has %s cpus; the test needs full 2-cpu nodes", n, cpu)
		}
	}

	w := framework.SampleAvailable(t, cl, name, map[string]string{"app": name})
	framework.Create(t, cl, sigAllNodesDaemonSet(t, name, "1200m"))

	framework.Eventually(t, 5*time.Minute, func(ctx context.Context) (bool, string) {
		claims := framework.PoolNodeClaimsByName(ctx, cl, name)
		left := 0
		for n := range original {
			if _, ok := claims[n]; ok {
				left++
			}
		}
		withAgent, nodes := sigNodesRunningApp(ctx, cl, name, "log-collector")
		running := 0
		for _, p := range framework.AvailablePods(ctx, cl, name, nil) {
			if p.Labels["app"] == name {
				running++
			}
		}
		pending := framework.PendingPods(ctx, cl, name)
		return left == 0 && nodes > 0 && withAgent == nodes && running == 2 && pending == 0,
			fmt.Sprintf("%d original NodeClaims left, DaemonSet pod runs on %d of %d nodes, %d of 2 replicas running, %d pods pending",
				left, withAgent, nodes, running, pending)
	})
	samples, minAvailable := w.Stop()
	if samples < 10 || minAvailable < 1 {
		t.Errorf("%d samples, at least %d replica(s) running in each; want at least 1 throughout", samples, minAvailable)
	}
	if !slices.Contains(framework.EventReasons(t, cl, "", "Node", ""), disruption.ReasonDaemonSetReplacement) || !slices.Contains(framework.EventReasons(t, cl, "", "Pod", ""), disruption.ReasonDaemonSetReplacement) {
		t.Errorf("no %s event on a node and a DaemonSet pod", disruption.ReasonDaemonSetReplacement)
	}
}

// sigAllNodesDaemonSet is examples/daemonset-all-nodes.yaml in namespace,
// requesting cpu, and kept to the test's NodePool so it does not land on
// other tests' nodes.
func sigAllNodesDaemonSet(t *testing.T, namespace, cpu string) *appsv1.DaemonSet {
	t.Helper()
	raw, err := os.ReadFile(fixtures.Example(t, "daemonset-all-nodes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ds := &appsv1.DaemonSet{}
	if err := yaml.Unmarshal(raw, ds); err != nil {
		t.Fatal(err)
	}
	ds.Namespace = namespace
	ds.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = test.ResourceList("cpu", cpu)[corev1.ResourceCPU]
	terms := ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	terms[0].MatchExpressions = append(terms[0].MatchExpressions,
		corev1.NodeSelectorRequirement{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{namespace}})
	return ds
}

// sigNodesRunningApp counts the pool's Nodes and those running a pod of the app.
func sigNodesRunningApp(ctx context.Context, cl client.Client, pool, app string) (withApp, nodes int) {
	var list corev1.NodeList
	if err := cl.List(ctx, &list, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}); err != nil {
		return 0, -1
	}
	on := map[string]bool{}
	for _, p := range framework.AvailablePods(ctx, cl, pool, nil) {
		if p.Labels["app"] == app {
			on[p.Spec.NodeName] = true
		}
	}
	for _, n := range list.Items {
		if n.DeletionTimestamp != nil {
			continue
		}
		nodes++
		if on[n.Name] {
			withApp++
		}
	}
	return withApp, nodes
}
