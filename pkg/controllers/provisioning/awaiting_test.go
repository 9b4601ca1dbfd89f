package provisioning_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// awaitingPods creates pods as a controller would, with no scheduler
// verdict yet, and waits until state holds them.
func (h *harness) awaitingPods(pods ...*corev1.Pod) []*corev1.Pod {
	h.t.Helper()
	for _, pod := range pods {
		pod.Status = corev1.PodStatus{}
		h.create(pod)
	}
	h.eventually("pods awaiting the scheduler in state", func() bool {
		n := 0
		for _, pod := range h.cluster.ProvisionablePods() {
			if state.IsAwaitingScheduler(pod) {
				n++
			}
		}
		return n == len(pods)
	})
	return pods
}

// TestPodsAwaitingTheSchedulerGetNodes: pods the scheduler has not tried
// yet are planned for at once, and nominated to the new NodeClaim.
func TestPodsAwaitingTheSchedulerGetNodes(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	pods := h.awaitingPods(test.MakePod("new-a").Requests("cpu", "1").Obj(), test.MakePod("new-b").Requests("cpu", "1").Obj())
	res := h.schedule()
	if len(res.Created) != 1 {
		t.Fatalf("created %v, want one NodeClaim", res.Created)
	}
	for _, pod := range pods {
		if got := h.cluster.NominatedNode(clientKeyOf(pod)); got != state.NodeClaimID(res.Created[0]) {
			t.Errorf("pod %s nominated to %q, want the new NodeClaim", pod.Name, got)
		}
	}
	if again := h.schedule(); len(again.Created) != 0 {
		t.Errorf("a second pass created %v for pods already planned for", again.Created)
	}
}

// TestPodAwaitingTheSchedulerIsLeftToItOnExistingCapacity: a pod that
// fits a node that exists is neither nominated nor hinted (the scheduler
// places it there itself), and one karp cannot help gets no
// FailedScheduling event from karp before the scheduler has tried it.
func TestPodAwaitingTheSchedulerIsLeftToItOnExistingCapacity(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	h.readyNode("existing", "8", "16Gi")
	pods := h.awaitingPods(
		test.MakePod("fits").Requests("cpu", "2").Obj(),
		test.MakePod("too-big").Requests("cpu", "100").Obj(),
	)
	// A control: a pod the scheduler already failed, which karp nominates
	// to the existing node, hints and reports in the same pass.
	control := h.pendingPods(test.MakePod("control").Requests("cpu", "1").Obj())[0]
	if res := h.schedule(); len(res.Created) != 0 {
		t.Fatalf("created %v, want nothing", res.Created)
	}
	if got := h.cluster.NominatedNode(clientKeyOf(pods[0])); got != "" {
		t.Errorf("pod fits nominated to %q, want no nomination", got)
	}
	// Sync point: the pass's hint and event writes (asynchronous) have
	// landed for the control, so they would have for the pods left to the
	// scheduler too.
	h.eventually("the control pod's hint and Nominated event", func() bool {
		if h.nominatedNodeName(control) != "existing" {
			return false
		}
		for _, e := range h.base.Events(control) {
			if e.Reason == provisioning.ReasonNominated {
				return true
			}
		}
		return false
	})
	if got := h.nominatedNodeName(pods[0]); got != "" {
		t.Errorf("pod fits hinted with %q", got)
	}
	for _, pod := range pods {
		for _, e := range h.base.Events(pod) {
			if e.Reason == provisioning.ReasonFailedScheduling || e.Reason == provisioning.ReasonNominated {
				t.Errorf("pod %s got event %s: %s", pod.Name, e.Reason, e.Note)
			}
		}
	}
}
