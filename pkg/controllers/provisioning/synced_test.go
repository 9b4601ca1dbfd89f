package provisioning_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestNothingHappensUntilStateIsSynced drives Reconcile over a state the
// test feeds by hand, so it can leave a NodeClaim out of it.
func TestNothingHappensUntilStateIsSynced(t *testing.T) {
	h := newHarness(t)
	np := h.readyNodePool(test.MakeNodePool("default").Obj())
	taint := corev1.Taint{Key: "dedicated", Value: "other", Effect: corev1.TaintEffectNoSchedule}
	inFlight := test.MakeNodeClaim("default-inflight").NodePool("default").Taint(taint).
		NodeClassRef(np.Spec.Template.Spec.NodeClassRef).Obj()
	h.create(inFlight)
	pod := h.pendingPods(test.MakePod("p").Requests("cpu", "1").Obj())[0]
	h.eventually("NodeClaim in the informer-fed state", func() bool {
		ok, err := h.cluster.Synced(h.ctx)
		return err == nil && ok
	})

	cluster := state.NewCluster(h.clock, h.mgr.GetClient())
	for _, np := range h.cluster.NodePools() {
		cluster.UpdateNodePool(np)
	}
	cluster.UpdatePod(withStatus(pod))
	p := provisioning.NewProvisioner(h.mgr.GetClient(), h.provider, cluster, h.base.Recorder, h.clock, provisioning.DefaultOptions())

	// The window closes, but state lacks the in-flight NodeClaim: nothing
	// is created and the pass comes back soon.
	p.Batcher().Trigger(pod.UID)
	stepWhenWindowOpen(t, p.Batcher(), h.clock, time.Second)
	res, err := p.Reconcile(h.ctx)
	if err != nil {
		t.Fatalf("reconciling: %v", err)
	}
	if res.RequeueAfter == 0 {
		t.Error("unsynced pass did not requeue")
	}
	if got := len(h.nodeClaims()); got != 1 {
		t.Fatalf("got %d NodeClaims while unsynced, want only the in-flight one", got)
	}

	// Once state holds it, the retried pass provisions without a new trigger.
	cluster.UpdateNodeClaim(inFlight)
	if _, err := p.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconciling: %v", err)
	}
	if got := len(h.nodeClaims()); got != 2 {
		t.Errorf("got %d NodeClaims once synced, want the in-flight one and a new one", got)
	}
}

func withStatus(pod *corev1.Pod) *corev1.Pod {
	pod = pod.DeepCopy()
	pod.Status.Conditions = test.MakePod(pod.Name).Obj().Status.Conditions
	return pod
}

// stepWhenWindowOpen steps the clock by d, in the background, once the
// batcher's Wait has taken every queued trigger and armed its window's
// timers (the sync point the batcher reports), so the step closes that
// window. Call it before the Wait starts.
func stepWhenWindowOpen(t *testing.T, b *provisioning.Batcher, clk *clocktesting.FakeClock, d time.Duration) {
	open := make(chan struct{}, 1)
	provisioning.SetBatcherWaitingHook(b, func(queued int) {
		if queued > 0 {
			return
		}
		select {
		case open <- struct{}{}:
		default:
		}
	})
	go func() {
		select {
		case <-open:
			clk.Step(d)
		case <-t.Context().Done():
		}
	}()
}
