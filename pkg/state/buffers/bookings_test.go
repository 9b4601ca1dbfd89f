package buffers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	autoscalingv1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func consuming(name, request string) *corev1.Pod {
	return test.MakePod(name).Requests("cpu", "1").Annotation(autoscalingv1.ConsumeAnnotationKey, request).Obj()
}

func TestBookingsPods(t *testing.T) {
	b := NewBookings()
	batch := types.NamespacedName{Namespace: "default", Name: "batch"}
	other := types.NamespacedName{Namespace: "default", Name: "other"}
	b.Set(Booking{Key: batch, Pods: []*corev1.Pod{consuming("batch-0", "batch"), consuming("batch-1", "batch"), consuming("batch-2", "batch")}})
	b.Set(Booking{Key: other, Pods: []*corev1.Pod{consuming("other-0", "other")}, OnNodeClaims: true})

	all := b.Pods(nil, nil)
	if len(all) != 4 {
		t.Fatalf("%d virtual pods, want 4", len(all))
	}
	for _, pod := range all {
		if !IsVirtual(pod) || pod.Spec.NodeName != "" || pod.Status.Phase != corev1.PodPending {
			t.Errorf("pod %s is not a pending virtual pod", pod.Name)
		}
		if _, ok := KeyOf(pod); ok {
			t.Errorf("booked pod %s is taken for a buffer's", pod.Name)
		}
	}
	// Two real pods consume batch (one pending, one running); a finished
	// one and a virtual one do not count.
	done := consuming("batch-done", "batch")
	done.Status.Phase = corev1.PodSucceeded
	running := consuming("batch-running", "batch")
	running.Status.Phase = corev1.PodRunning
	consumed := Consumed([]*corev1.Pod{consuming("batch-pending", "batch"), done}, []*simulation.Node{{Pods: []*corev1.Pod{running, all[0]}}})
	if consumed[batch] != 2 {
		t.Errorf("consumed = %v, want 2 for batch", consumed)
	}
	notOnNodeClaims := func(bk Booking) bool { return !bk.OnNodeClaims }
	if got := b.Pods(consumed, notOnNodeClaims); len(got) != 1 || got[0].Name != "batch-2-booked" {
		t.Errorf("virtual pods left = %v, want only batch-2-booked", names(got))
	}
	if !b.Delete(batch) || b.Has(batch) || b.Delete(batch) {
		t.Error("Delete did not let the booking go once")
	}
}

// Reserve puts the booked pods on the nodes where they fit, bound, and
// returns those that fit nowhere.
func TestReserve(t *testing.T) {
	node := &simulation.Node{Name: "n", Labels: map[string]string{corev1.LabelHostname: "n"}, Initialized: true, Launched: true,
		Allocatable: test.ResourceList("cpu", "2", "memory", "4Gi", "pods", "10"), Capacity: test.ResourceList("cpu", "2", "memory", "4Gi", "pods", "10")}
	booked := NewBookings()
	booked.Set(Booking{Key: types.NamespacedName{Namespace: "default", Name: "batch"},
		Pods: []*corev1.Pod{consuming("batch-0", "batch"), consuming("batch-1", "batch"), consuming("batch-2", "batch")}})

	rest := Reserve(t.Context(), simulation.Input{Nodes: []*simulation.Node{node}}, booked.Pods(nil, nil))

	if len(node.Pods) != 2 || len(rest) != 1 {
		t.Fatalf("%d booked pods bound to the node and %d left, want 2 and 1", len(node.Pods), len(rest))
	}
	for _, pod := range node.Pods {
		if pod.Spec.NodeName != "n" || pod.Status.Phase != corev1.PodRunning {
			t.Errorf("reserved pod %s is not bound and running on n", pod.Name)
		}
	}
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}
