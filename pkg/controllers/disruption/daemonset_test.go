package disruption_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// daemonPod is a DaemonSet's pod pinned to node the way the DaemonSet
// controller pins it, with the scheduler's verdict in message ("" means
// not yet judged).
func daemonPod(name, node, message string) *corev1.Pod {
	pod := test.MakePod(name).Namespace("default").Owner("DaemonSet", "agent", "agent-uid").Requests("cpu", "1").Obj()
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}}
	pod.Status.Conditions = nil
	if message != "" {
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: message}}
	}
	return pod
}

func TestStarvedDaemonPods(t *testing.T) {
	insufficient := "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node affinity/selector."
	tests := map[string]struct {
		pod  func() *corev1.Pod
		want string // node name, "" when not starved
	}{
		"insufficient cpu": {pod: func() *corev1.Pod { return daemonPod("a", "n1", insufficient) }, want: "n1"},
		"too many pods":    {pod: func() *corev1.Pod { return daemonPod("a", "n1", "0/1 nodes are available: 1 Too many pods.") }, want: "n1"},
		"untolerated taint": {pod: func() *corev1.Pod {
			return daemonPod("a", "n1", "0/1 nodes are available: 1 node(s) had untolerated taint {x: y}.")
		}},
		"not judged yet": {pod: func() *corev1.Pod { return daemonPod("a", "n1", "") }},
		"bound": {pod: func() *corev1.Pod {
			p := daemonPod("a", "n1", insufficient)
			p.Spec.NodeName = "n1"
			return p
		}},
		"terminating": {pod: func() *corev1.Pod {
			p := daemonPod("a", "n1", insufficient)
			p.DeletionTimestamp = ptr.To(metav1.Now())
			return p
		}},
		"not a DaemonSet pod": {pod: func() *corev1.Pod {
			p := daemonPod("a", "n1", insufficient)
			p.OwnerReferences[0].Kind = "ReplicaSet"
			return p
		}},
		"no node pin": {pod: func() *corev1.Pod {
			p := daemonPod("a", "n1", insufficient)
			p.Spec.Affinity = nil
			return p
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := disruption.StarvedDaemonPods([]*corev1.Pod{tc.pod()})
			var nodes []string
			for n := range got {
				nodes = append(nodes, n)
			}
			want := []string{}
			if tc.want != "" {
				want = []string{tc.want}
			}
			if !slices.Equal(append([]string{}, nodes...), want) {
				t.Errorf("starved nodes = %v, want %v", nodes, want)
			}
		})
	}
}

// starvedDaemonSet creates DaemonSet "agent" requesting cpu and its
// pending pod for node, judged by the scheduler with message.
func (h *harness) starvedDaemonSet(cpu, node, message string) *corev1.Pod {
	h.t.Helper()
	ds := test.MakeDaemonSet("agent").Namespace("default").Requests("cpu", cpu).Obj()
	h.create(ds)
	pod := daemonPod("agent-"+node, node, "")
	pod.Labels = ds.Spec.Template.Labels
	pod.OwnerReferences[0].UID = ds.UID
	pod.Spec.Containers[0].Resources.Requests = test.ResourceList("cpu", cpu)
	h.create(pod)
	pod.Status.Conditions = daemonPod("x", node, message).Status.Conditions
	if err := h.client.Status().Update(h.ctx, pod); err != nil {
		h.t.Fatalf("updating daemon pod status: %v", err)
	}
	h.eventually("daemonset in state", func() bool { return len(h.cluster.DaemonSets()) == 1 })
	return pod
}

func TestNodeADaemonSetPodDoesNotFitIsReplacedWithOneThatFits(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "100%"}).Obj())
	h.runningNode("full", nodeOpts{it: smallType}, pod("web", "1500m"))
	dsPod := h.starvedDaemonSet("1", "full", "0/1 nodes are available: 1 Insufficient cpu.")

	if !h.pass() {
		t.Fatal("no command for a node its DaemonSet pod does not fit")
	}
	if !h.tainted("full") {
		t.Error("node not tainted for replacement")
	}
	reps := h.replacements("full")
	if len(reps) != 1 {
		t.Fatalf("replacements = %d, want 1", len(reps))
	}
	// 1.5 cpu of workload plus the 1 cpu DaemonSet pod needs the large type.
	var types []string
	for _, r := range reps[0].Spec.Requirements {
		if r.Key == corev1.LabelInstanceTypeStable && r.Operator == corev1.NodeSelectorOpIn {
			types = r.Values
		}
	}
	if !slices.Equal(types, []string{largeType.Name}) {
		t.Errorf("replacement instance types = %v, want only %s (the small type cannot hold the pod and the DaemonSet)", types, largeType.Name)
	}
	h.eventually("DaemonSetReplacement events", func() bool {
		return eventSeen(h, "Node", "full", disruption.ReasonDaemonSetReplacement) &&
			eventSeen(h, "Pod", dsPod.Name, disruption.ReasonDaemonSetReplacement)
	})
}

func TestDaemonSetPodBlockedByATaintReplacesNothing(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "100%"}).Obj())
	h.runningNode("full", nodeOpts{it: smallType}, pod("web", "1500m"))
	h.starvedDaemonSet("1", "full", "0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: x}.")

	h.decide()
	if h.tainted("full") || len(h.replacements("full")) != 0 {
		t.Error("a node was replaced although a bigger node would not help the DaemonSet pod")
	}
}

func TestDaemonSetReplacementRespectsBudgets(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "0", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}}).Obj())
	h.runningNode("full", nodeOpts{it: smallType}, pod("web", "1500m"))
	h.starvedDaemonSet("1", "full", "0/1 nodes are available: 1 Insufficient cpu.")

	h.decide()
	if h.tainted("full") || len(h.replacements("full")) != 0 {
		t.Error("replaced although the Drifted budget is 0")
	}
}

// eventSeen reports whether an event with the reason was recorded about
// the object.
func eventSeen(h *harness, kind, name, reason string) bool {
	var list eventsv1.EventList
	if err := env.Client.List(h.ctx, &list); err != nil {
		h.t.Fatalf("listing events: %v", err)
	}
	for _, e := range list.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == reason {
			return true
		}
	}
	return false
}

func TestDaemonSetReplacementRespectsPDBs(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "100%"}).Obj())
	web := pod("web", "1500m")
	web.Labels = map[string]string{"app": "web"}
	h.runningNode("full", nodeOpts{it: smallType}, web)
	h.pdb("web", "web", 0)
	h.starvedDaemonSet("1", "full", "0/1 nodes are available: 1 Insufficient cpu.")

	h.decide()
	if h.tainted("full") || len(h.replacements("full")) != 0 {
		t.Error("replaced although a PDB allows no disruption of its pod")
	}
}

func TestDaemonSetStarvedNodeWhosePodsFitElsewhereIsDeleted(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "100%"}).
		ConsolidateAfter(karpv1.MustParseNillableDuration(karpv1.Never)).Obj())
	// The large node has room for the small node's pod plus the DaemonSet.
	h.runningNode("roomy", nodeOpts{it: largeType}, pod("a", "1"))
	h.runningNode("full", nodeOpts{it: smallType}, pod("b", "1500m"))
	h.starvedDaemonSet("1", "full", "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node affinity/selector.")

	if !h.pass() {
		t.Fatal("no command for the starved node")
	}
	if !h.gone("full") {
		t.Error("starved node not deleted although its pod fits on the roomy node")
	}
	if reps := h.replacements("full", "roomy"); len(reps) != 0 {
		t.Errorf("launched %d replacements; none are needed", len(reps))
	}
	if h.gone("roomy") {
		t.Error("the roomy node was disrupted")
	}
}
