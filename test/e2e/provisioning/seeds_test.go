package provisioning_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// The seed workloads and what each must run as.
var (
	seedFiles = []string{"nodepools-default-stable.yaml", "nodepool-gpu.yaml", "nodepool-generalcompute.yaml",
		"daemonset-all-nodes.yaml", "deployment-inflate-gpu.yaml", "deployment-my-team.yaml", "nginx-demo.yaml"}
	gpuTypes    = []string{"p3.8xlarge", "p3.16xlarge"}
	myTeamTypes = []string{"m5.large", "m5.xlarge", "m5.2xlarge", "c5.large", "c5.xlarge", "c5a.large", "c5a.xlarge", "r5.large", "r5.xlarge"}
)

func seedObjects() []client.Object {
	meta := func(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	objs := []client.Object{
		&appsv1.Deployment{ObjectMeta: meta("default", "inflate-gpu")},
		&appsv1.Deployment{ObjectMeta: meta("default", "workload-my-team")},
		&appsv1.Deployment{ObjectMeta: meta("default", "nginx-demo-deployment")},
		&policyv1.PodDisruptionBudget{ObjectMeta: meta("default", "nginx-demo-pdb")},
		&appsv1.DaemonSet{ObjectMeta: meta("kube-system", "log-collector")},
	}
	for _, pool := range []string{"default", "stable", "gpu", "generalcompute"} {
		objs = append(objs, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}})
	}
	return objs
}

// TestSeedScenarios applies the user examples `make run` applies and
// checks every workload runs where its NodePool says.
func TestSeedScenarios(t *testing.T) {
	ensureController(t)
	applyExamples(t, seedFiles...)
	t.Cleanup(func() { deleteAndWait(t, seedObjects()...) })

	// The generalcompute pool consolidates at once (consolidateAfter 0s),
	// so nodes may still be replaced after the pods first run: check the
	// whole picture until it holds.
	framework.Eventually(t, scaleTimeout, func(context.Context) (bool, string) { return seedsPlaced(t) })
	expectOneToOne(t)
}

// seedsPlaced reports whether every seed workload runs where its NodePool
// says and the DaemonSet runs on every node.
func seedsPlaced(t *testing.T) (bool, string) {
	nodes := map[string]*corev1.Node{}
	var list corev1.NodeList
	if err := framework.Current(t).Client.List(t.Context(), &list); err != nil {
		return false, err.Error()
	}
	for i := range list.Items {
		nodes[list.Items[i].Name] = &list.Items[i]
	}
	want := map[string]int{"inflate-gpu": 3, "workload-my-team": 200, "nginx-demo": 2}
	placed := map[string][]corev1.Pod{}
	for app, n := range want {
		pods := podsOf(t, "default", app)
		running := 0
		for _, pod := range pods {
			if framework.PodRunning(&pod) && pod.DeletionTimestamp == nil && nodes[pod.Spec.NodeName] != nil {
				running++
			}
		}
		if running != n || len(pods) != n {
			return false, fmt.Sprintf("%s: %d of %d pods running (%d exist)", app, running, n, len(pods))
		}
		placed[app] = pods
	}
	// inflate-gpu: only on p3.8xlarge/p3.16xlarge on-demand of the gpu pool.
	for _, pod := range placed["inflate-gpu"] {
		l := nodes[pod.Spec.NodeName].Labels
		if l[karpv1.NodePoolLabelKey] != "gpu" || !slices.Contains(gpuTypes, l[corev1.LabelInstanceTypeStable]) || l[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeOnDemand {
			return false, fmt.Sprintf("inflate-gpu pod %s on %s: pool %q type %q capacity %q", pod.Name, pod.Spec.NodeName,
				l[karpv1.NodePoolLabelKey], l[corev1.LabelInstanceTypeStable], l[karpv1.CapacityTypeLabelKey])
		}
	}
	// my-team: only on the listed types, labelled billing-team=my-team.
	for _, pod := range placed["workload-my-team"] {
		l := nodes[pod.Spec.NodeName].Labels
		if l["billing-team"] != "my-team" || !slices.Contains(myTeamTypes, l[corev1.LabelInstanceTypeStable]) || l[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeOnDemand {
			return false, fmt.Sprintf("my-team pod %s on %s: billing-team %q type %q capacity %q", pod.Name, pod.Spec.NodeName,
				l["billing-team"], l[corev1.LabelInstanceTypeStable], l[karpv1.CapacityTypeLabelKey])
		}
	}
	// nginx-demo: the hostname spread puts the replicas on different hosts.
	if nginx := placed["nginx-demo"]; nginx[0].Spec.NodeName == nginx[1].Spec.NodeName {
		return false, "both nginx-demo replicas on " + nginx[0].Spec.NodeName
	}
	return daemonSetEverywhere(t)
}

// daemonSetEverywhere reports whether a log-collector pod runs on every
// karp Node (tainted ones included) and every Node's pods fit within its
// allocatable.
func daemonSetEverywhere(t *testing.T) (bool, string) {
	cl := framework.Current(t).Client
	var nodes corev1.NodeList
	var pods corev1.PodList
	if err := cl.List(t.Context(), &nodes, client.HasLabels{karpv1.NodePoolLabelKey}); err != nil {
		return false, err.Error()
	}
	if err := cl.List(t.Context(), &pods); err != nil {
		return false, err.Error()
	}
	if len(nodes.Items) == 0 {
		return false, "no karp nodes"
	}
	return framework.DaemonOnEachAndFits(nodes.Items, pods.Items, "log-collector")
}
