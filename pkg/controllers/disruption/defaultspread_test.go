package disruption_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// replicaSetPods creates a ReplicaSet and returns count pods it controls
// (not yet created), each requesting cpu.
func (h *harness) replicaSetPods(name string, count int, cpu string) []*corev1.Pod {
	h.t.Helper()
	labels := map[string]string{"app": name, "pod-template-hash": "7c9"}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(count)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}}}
	h.create(rs)
	h.t.Cleanup(func() { _ = h.client.Delete(h.ctx, rs) })
	pods := make([]*corev1.Pod, count)
	for i := range pods {
		pods[i] = test.MakePod(name+"-"+string(rune('a'+i))).Namespace("default").Labels(labels).Requests("cpu", cpu).Obj()
		pods[i].OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}
	}
	return pods
}

// hostnameSpread is a --scheduler-config default: at most one more pod of
// a workload on a node than on any other (DoNotSchedule).
var hostnameSpread = scheduling.SpreadDefaults{scheduling.AnyScheduler: {{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
	WhenUnsatisfiable: corev1.DoNotSchedule}}}

// TestConsolidationHonoursDefaultSpread: two nodes each run one pod of a
// ReplicaSet that declares no spread. Both pods fit one node, but the
// scheduler's default hostname spread would not let them share it, so
// consolidation deletes neither node.
func TestConsolidationHonoursDefaultSpread(t *testing.T) {
	h := newHarness(t)
	h.opts.DefaultSpread = hostnameSpread
	h.newController()
	h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "100%"}).Obj())
	pods := h.replicaSetPods("web", 2, "500m")
	h.runningNode("a", nodeOpts{it: smallType}, pods[0])
	h.runningNode("b", nodeOpts{it: smallType}, pods[1])
	h.decide()
	for _, n := range []string{"a", "b"} {
		if h.gone(n) {
			t.Errorf("node %s deleted: its pod may not join the other pod of its ReplicaSet under the default spread", n)
		}
	}
	if n := len(h.replacements("a", "b")); n != 0 {
		t.Errorf("%d replacements launched; the nodes are already the cheapest", n)
	}
}

// TestConsolidationWithoutDefaultSpreadMerges is the control: without the
// default the same two pods share one node.
func TestConsolidationWithoutDefaultSpreadMerges(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "100%"}).Obj())
	pods := h.replicaSetPods("web", 2, "500m")
	h.runningNode("a", nodeOpts{it: smallType}, pods[0])
	h.runningNode("b", nodeOpts{it: smallType}, pods[1])
	h.decide()
	if !h.gone("a") && !h.gone("b") {
		t.Fatal("no node deleted, want the two pods merged onto one node")
	}
}
