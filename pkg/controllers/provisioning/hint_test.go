package provisioning_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning/hint"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// nominatedNodeName reads the pod's status.nominatedNodeName from the API.
func (h *harness) nominatedNodeName(pod *corev1.Pod) string {
	h.t.Helper()
	got := &corev1.Pod{}
	if err := h.client.Get(h.ctx, client.ObjectKeyFromObject(pod), got); err != nil {
		h.t.Fatal(err)
	}
	return got.Status.NominatedNodeName
}

// TestRegisteredNodeClaimHintsTheScheduler: pods nominated to a new
// NodeClaim get its node as status.nominatedNodeName once it registers,
// and not before (the node's name is unknown until then).
func TestRegisteredNodeClaimHintsTheScheduler(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	pods := h.pendingPods(
		test.MakePod("a").Requests("cpu", "1").Obj(),
		test.MakePod("b").Requests("cpu", "1").Obj(),
	)
	res := h.schedule()
	if len(res.Created) != 1 {
		t.Fatalf("created %v, want one NodeClaim", res.Created)
	}
	hinter := hint.NewController(h.client, h.cluster)
	nc := &karpv1.NodeClaim{}
	if err := h.client.Get(h.ctx, client.ObjectKey{Name: res.Created[0]}, nc); err != nil {
		t.Fatal(err)
	}
	if _, err := hinter.Reconcile(h.ctx, nc); err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods {
		if got := h.nominatedNodeName(pod); got != "" {
			t.Errorf("pod %s hinted %q before its NodeClaim registered", pod.Name, got)
		}
	}

	nc.Status.NodeName = "node-of-" + nc.Name
	if err := h.client.Status().Update(h.ctx, nc); err != nil {
		t.Fatal(err)
	}
	if _, err := hinter.Reconcile(h.ctx, nc); err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods {
		if got := h.nominatedNodeName(pod); got != nc.Status.NodeName {
			t.Errorf("pod %s status.nominatedNodeName = %q, want %q", pod.Name, got, nc.Status.NodeName)
		}
		// karp's own hint keeps the pod provisionable (should that node
		// never come), and the scheduler's condition is kept.
		got := &corev1.Pod{}
		if err := h.client.Get(h.ctx, client.ObjectKeyFromObject(pod), got); err != nil {
			t.Fatal(err)
		}
		if !state.IsProvisionable(got) {
			t.Errorf("pod %s with karp's hint is not provisionable: %+v", pod.Name, got.Status)
		}
	}
}

// TestPodPlacedOnAnExistingNodeHintsTheScheduler: a pod the solver puts
// on a node that exists is hinted with that node during the pass.
func TestPodPlacedOnAnExistingNodeHintsTheScheduler(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	h.readyNode("existing", "8", "16Gi")
	pods := h.pendingPods(test.MakePod("p").Requests("cpu", "2").Obj())
	if res := h.schedule(); len(res.Created) != 0 {
		t.Fatalf("created %v, want nothing", res.Created)
	}
	h.eventually("pod hinted with node existing", func() bool { return h.nominatedNodeName(pods[0]) == "existing" })
}

// TestHintClearedByTheSchedulerIsWrittenAgain: the scheduler clears a
// pod's nominated node each time it fails to place it; while karp still
// plans the pod for a registered node, the hint is written again.
func TestHintClearedByTheSchedulerIsWrittenAgain(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	pods := h.pendingPods(test.MakePod("again").Requests("cpu", "1").Obj())
	hinter := hint.NewController(h.mgr.GetClient(), h.cluster)
	if err := hinter.Register(h.ctx, h.mgr); err != nil {
		t.Fatal(err)
	}
	nc := h.registeredNodeClaim()
	h.eventually("pod hinted at registration", func() bool { return h.nominatedNodeName(pods[0]) == nc.Status.NodeName })

	// What the scheduler's failure handler writes.
	got := h.clearHint(pods[0])
	h.eventually("pod hinted again", func() bool { return h.nominatedNodeName(pods[0]) == nc.Status.NodeName })

	// A nomination the scheduler made itself (preemption) is not
	// overwritten.
	if err := h.client.Get(h.ctx, client.ObjectKeyFromObject(pods[0]), got); err != nil {
		t.Fatal(err)
	}
	got.Status.NominatedNodeName = "preempting-on-another-node"
	if err := h.client.Status().Update(h.ctx, got); err != nil {
		t.Fatal(err)
	}
	h.eventually("the scheduler's nomination in the cache", func() bool {
		cached := &corev1.Pod{}
		return h.mgr.GetClient().Get(h.ctx, client.ObjectKeyFromObject(pods[0]), cached) == nil &&
			cached.Status.NominatedNodeName == "preempting-on-another-node"
	})
	if _, err := hinter.Reconcile(h.ctx, nc); err != nil {
		t.Fatal(err)
	}
	if got := h.nominatedNodeName(pods[0]); got != "preempting-on-another-node" {
		t.Errorf("the scheduler's own nomination was replaced by %q", got)
	}
}

// TestHintNotWrittenTwiceWhileTheCacheLags: a hint karp wrote is not
// written again while the cache still shows the copy it was written over
// (the lift used to rewrite hundreds of them while the pod watch lagged);
// once the cache shows a newer copy without it, the scheduler cleared it
// and it is written again.
func TestHintNotWrittenTwiceWhileTheCacheLags(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	pods := h.pendingPods(test.MakePod("lagging").Requests("cpu", "1").Obj())
	nc := h.registeredNodeClaim()
	// A cache frozen before the hint: every read of the pod returns this copy.
	frozen := map[string]client.Object{}
	h.eventually("the pod in the cache", func() bool {
		got := &corev1.Pod{}
		if h.mgr.GetClient().Get(h.ctx, client.ObjectKeyFromObject(pods[0]), got) != nil {
			return false
		}
		frozen[got.Name] = got
		return true
	})
	lagging, patches := h.laggingClient(frozen)
	hinter := hint.NewController(lagging, h.cluster)
	for pass := 1; pass <= 2; pass++ {
		if _, err := hinter.Reconcile(h.ctx, nc); err != nil {
			t.Fatal(err)
		}
		if *patches != 1 {
			t.Fatalf("pass %d: %d hint writes, want 1 (the second pass reads the copy the hint was written over)", pass, *patches)
		}
	}
	if got := h.nominatedNodeName(pods[0]); got != nc.Status.NodeName {
		t.Fatalf("hint %q, want %q", got, nc.Status.NodeName)
	}

	// The scheduler clears the hint, and the cache shows that copy.
	frozen[pods[0].Name] = h.clearHint(pods[0])
	if _, err := hinter.Reconcile(h.ctx, nc); err != nil {
		t.Fatal(err)
	}
	if *patches != 2 {
		t.Errorf("%d hint writes after the scheduler cleared the hint, want 2", *patches)
	}
	if got := h.nominatedNodeName(pods[0]); got != nc.Status.NodeName {
		t.Errorf("hint %q after it was written again, want %q", got, nc.Status.NodeName)
	}
}

// registeredNodeClaim runs a provisioning pass that creates one NodeClaim
// and registers it (sets its node name), as the lifecycle would.
func (h *harness) registeredNodeClaim() *karpv1.NodeClaim {
	h.t.Helper()
	res := h.schedule()
	if len(res.Created) != 1 {
		h.t.Fatalf("created %v, want one NodeClaim", res.Created)
	}
	nc := &karpv1.NodeClaim{}
	if err := h.client.Get(h.ctx, client.ObjectKey{Name: res.Created[0]}, nc); err != nil {
		h.t.Fatal(err)
	}
	nc.Status.NodeName = "node-of-" + nc.Name
	if err := h.client.Status().Update(h.ctx, nc); err != nil {
		h.t.Fatal(err)
	}
	return nc
}

// clearHint clears the pod's status.nominatedNodeName in the API, as the
// scheduler's failure handler does, and returns the pod as stored.
func (h *harness) clearHint(pod *corev1.Pod) *corev1.Pod {
	h.t.Helper()
	got := &corev1.Pod{}
	if err := h.client.Get(h.ctx, client.ObjectKeyFromObject(pod), got); err != nil {
		h.t.Fatal(err)
	}
	got.Status.NominatedNodeName = ""
	if err := h.client.Status().Update(h.ctx, got); err != nil {
		h.t.Fatal(err)
	}
	return got
}
