package install

import (
	"context"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/localcluster"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// The seed examples (what `make run` applies, the provisioning suite's
// TestSeedScenarios) and the NodePools they create.
var (
	seedFiles = []string{"nodepools-default-stable.yaml", "nodepool-gpu.yaml", "nodepool-generalcompute.yaml",
		"daemonset-all-nodes.yaml", "deployment-inflate-gpu.yaml", "deployment-my-team.yaml", "nginx-demo.yaml"}
	seedPools = []string{"default", "stable", "gpu", "generalcompute"}
)

// TestProvisioningSeeds applies the seed examples and waits until every
// workload runs where its NodePool says, launched by the controller
// running as the chart's ServiceAccount; removing them must terminate
// every node it launched (drain, eviction, Node and NodeClaim deletion).
func TestProvisioningSeeds(t *testing.T) {
	in := install(t)
	f := framework.Current(t)
	paths := make([]string, 0, len(seedFiles))
	for _, file := range seedFiles {
		paths = append(paths, fixtures.Example(t, file))
	}
	if err := localcluster.Apply(t.Context(), f.Config, paths, io.Discard); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 4*time.Minute, func(ctx context.Context) (bool, string) { return seedsPlaced(ctx, f.Client) })

	deleteSeeds(t, f.Client)
	expectNoForbidden(t, in)
}

// seedsPlaced reports whether the seed workloads run where their
// NodePools say and the all-nodes DaemonSet runs on every karp node.
func seedsPlaced(ctx context.Context, cl client.Client) (bool, string) {
	var nodes corev1.NodeList
	if err := cl.List(ctx, &nodes, client.HasLabels{karpv1.NodePoolLabelKey}); err != nil {
		return false, err.Error()
	}
	byName := map[string]*corev1.Node{}
	for i := range nodes.Items {
		byName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	for _, w := range []struct {
		app    string
		want   int
		placed func(*corev1.Node) bool
	}{
		{"inflate-gpu", 3, func(n *corev1.Node) bool { return n.Labels[karpv1.NodePoolLabelKey] == "gpu" }},
		{"workload-my-team", 200, func(n *corev1.Node) bool { return n.Labels["billing-team"] == "my-team" }},
		{"nginx-demo", 2, func(*corev1.Node) bool { return true }},
	} {
		var pods corev1.PodList
		if err := cl.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels{"app": w.app}); err != nil {
			return false, err.Error()
		}
		running, hosts := 0, map[string]bool{}
		for _, pod := range pods.Items {
			node := byName[pod.Spec.NodeName]
			if framework.PodRunning(&pod) && pod.DeletionTimestamp == nil && node != nil {
				if !w.placed(node) {
					return false, fmt.Sprintf("%s pod %s on %s, outside its NodePool", w.app, pod.Name, node.Name)
				}
				running++
				hosts[node.Name] = true
			}
		}
		if running != w.want {
			return false, fmt.Sprintf("%s: %d of %d pods running on karp nodes", w.app, running, w.want)
		}
		if w.app == "nginx-demo" && len(hosts) != 2 {
			return false, "both nginx-demo replicas on one node"
		}
	}
	var daemons corev1.PodList
	if err := cl.List(ctx, &daemons, client.InNamespace("kube-system")); err != nil {
		return false, err.Error()
	}
	covered := map[string]bool{}
	for _, pod := range daemons.Items {
		if framework.PodRunning(&pod) && slices.ContainsFunc(pod.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "DaemonSet" }) {
			covered[pod.Spec.NodeName] = true
		}
	}
	for name := range byName {
		if !covered[name] {
			return false, "no DaemonSet pod running on " + name
		}
	}
	return len(byName) > 0, fmt.Sprintf("%d karp nodes", len(byName))
}

// deleteSeeds deletes the seed workloads and NodePools and waits until
// karp has terminated every NodeClaim and Node of the pools.
func deleteSeeds(t *testing.T, cl client.Client) {
	t.Helper()
	ctx := context.Background()
	meta := func(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	objs := []client.Object{
		&appsv1.Deployment{ObjectMeta: meta("default", "inflate-gpu")},
		&appsv1.Deployment{ObjectMeta: meta("default", "workload-my-team")},
		&appsv1.Deployment{ObjectMeta: meta("default", "nginx-demo-deployment")},
		&policyv1.PodDisruptionBudget{ObjectMeta: meta("default", "nginx-demo-pdb")},
		&appsv1.DaemonSet{ObjectMeta: meta("kube-system", "log-collector")},
	}
	for _, pool := range seedPools {
		objs = append(objs, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}})
	}
	for _, o := range objs {
		if err := cl.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s: %v", o.GetName(), err)
		}
	}
	framework.Eventually(t, 4*time.Minute, func(ctx context.Context) (bool, string) {
		for _, pool := range seedPools {
			var claims karpv1.NodeClaimList
			var nodes corev1.NodeList
			if err := cl.List(ctx, &claims, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}); err != nil {
				return false, err.Error()
			}
			if err := cl.List(ctx, &nodes, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}); err != nil {
				return false, err.Error()
			}
			if len(claims.Items) > 0 || len(nodes.Items) > 0 {
				return false, fmt.Sprintf("NodePool %s: %d NodeClaims and %d Nodes left", pool, len(claims.Items), len(nodes.Items))
			}
		}
		return true, ""
	})
}

// TestConsolidationSeed is the disruption suite's nginx-demo scenario:
// nginx-demo (two replicas spread over hosts, PDB minAvailable 50%) beside
// three 2-cpu filler pods on their own nodes; once the filler goes, karp
// consolidates the pool to nodes sized for nginx alone without ever
// leaving nginx without an available replica.
func TestConsolidationSeed(t *testing.T) {
	in := install(t)
	f := framework.Current(t)
	cl := f.Client
	const name = "install-consolidation"
	framework.CreatePool(t, cl, name, framework.NginxDemoPool(name))
	t.Cleanup(func() { framework.DeletePool(cl, name) })
	framework.ConsolidateNginxDemo(t, cl, name)
	expectNoForbidden(t, in)
}
