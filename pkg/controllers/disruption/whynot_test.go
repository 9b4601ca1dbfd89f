package disruption_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// A node kept because consolidateAfter had not elapsed must not keep
// saying so once it has, even on a pass where no consolidation method
// looks at it (here emptiness decides the pass about another node).
func TestConsolidateAfterReasonDoesNotOutliveItsCause(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "100%"}).
		ConsolidateAfter(karpv1.NewNillableDuration(30 * time.Minute)).Obj())
	h.runningNode("busy", nodeOpts{it: smallType, initialized: h.clock.Now().Add(-10 * time.Minute)}, pod("p1", "1500m"))
	h.pass()
	if c := h.blocked("busy"); c == nil || c.Reason != disruption.BlockedConsolidateAfter {
		t.Fatalf("DisruptionBlocked = %+v, want reason %s", c, disruption.BlockedConsolidateAfter)
	}
	// Sync point: the cluster state has the condition the pass wrote. It
	// learns of the write through its informer, after the patch returned;
	// a pass before that finds no condition to remove (the next one would).
	h.eventually("busy's DisruptionBlocked condition in state", func() bool {
		for _, sn := range h.cluster.Nodes() {
			if sn.Name() == "busy" && sn.NodeClaim != nil {
				c := sn.NodeClaim.StatusConditions().Get(disruption.ConditionTypeDisruptionBlocked)
				return c != nil && c.Reason == disruption.BlockedConsolidateAfter
			}
		}
		return false
	})

	h.clock.Step(25 * time.Minute) // busy's consolidateAfter has now elapsed
	h.runningNode("empty", nodeOpts{it: smallType})
	h.pass() // emptiness picks "empty"; the consolidation methods do not run
	if c := h.blocked("busy"); c != nil && c.Reason == disruption.BlockedConsolidateAfter {
		t.Fatalf("DisruptionBlocked still %q after consolidateAfter elapsed: %s", c.Reason, c.Message)
	}
	h.clock.Step(h.opts.ValidationDelay)
	h.pass() // the empty node goes
	if !h.gone("empty") {
		t.Fatal("empty node not deleted")
	}
	h.pass() // consolidation searches busy: no cheaper placement
	if c := h.blocked("busy"); c == nil || c.Reason != disruption.BlockedNoCheaper {
		t.Fatalf("DisruptionBlocked = %+v, want reason %s once consolidation searched the node", c, disruption.BlockedNoCheaper)
	}
}

// A reason that was evaluated for the node itself (a do-not-disrupt
// annotation) disappears when its cause does.
func TestDoNotDisruptReasonClearsWhenTheAnnotationGoes(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	nc := h.runningNode("big", nodeOpts{it: largeType, annotations: map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}}, pod("p1", "1"))
	h.pass()
	if c := h.blocked("big"); c == nil || c.Reason != disruption.BlockedDoNotDisrupt {
		t.Fatalf("DisruptionBlocked = %+v, want reason %s", c, disruption.BlockedDoNotDisrupt)
	}
	nc = h.nodeClaim(nc.Name)
	nc.Annotations = nil
	if err := h.client.Update(h.ctx, nc); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{}
	if err := h.client.Get(h.ctx, client.ObjectKey{Name: "big"}, node); err != nil {
		t.Fatal(err)
	}
	node.Annotations = nil
	if err := h.client.Update(h.ctx, node); err != nil {
		t.Fatal(err)
	}
	h.eventually("annotation gone from state", func() bool {
		for _, sn := range h.cluster.Nodes() {
			if sn.Name() == "big" && sn.NodeClaim != nil && sn.Node != nil &&
				sn.NodeClaim.Annotations[karpv1.DoNotDisruptAnnotationKey] == "" && sn.Node.Annotations[karpv1.DoNotDisruptAnnotationKey] == "" {
				return true
			}
		}
		return false
	})
	h.pass()
	if c := h.blocked("big"); c != nil && c.Reason == disruption.BlockedDoNotDisrupt {
		t.Fatalf("DisruptionBlocked still %q after the annotation was removed", c.Reason)
	}
}

// A new node still under its batch hold is empty because no pod can land
// on it yet: it is kept (without recording it) however long the pods it
// was launched for take to be nominated again, and taken once a hold
// still there long after initialization counts as a fault.
func TestNodeUnderItsBatchHoldIsKept(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "100%"}).
		ConsolidateAfter(karpv1.NewNillableDuration(0)).Obj())
	hold := []corev1.Taint{karpv1.BatchHoldNoScheduleTaint}
	h.runningNode("held", nodeOpts{it: largeType, taints: hold, initialized: h.clock.Now().Add(-10 * time.Second)})
	h.runningNode("stuck", nodeOpts{it: largeType, taints: hold, initialized: h.clock.Now().Add(-state.BatchHoldGrace - time.Minute)})
	h.decide()
	if h.gone("held") {
		t.Fatal("an empty node under its batch hold was disrupted")
	}
	if c := h.blocked("held"); c != nil {
		t.Fatalf("DisruptionBlocked = %s (%s), want no condition while the node is only held", c.Reason, c.Message)
	}
	if !h.gone("stuck") {
		t.Error("an empty node whose batch hold outlived its grace was kept")
	}
}

// A node that pending pods still name in status.nominatedNodeName is kept
// after karp's own nomination of them ran out: a loaded kube-scheduler can
// take longer than the nomination TTL to reach pods it was sent to a new
// node with, and removing the node then sent them to new nodes one by one.
// Once the scheduler has tried them (it clears the name when it fails a
// pod), they no longer keep the node.
func TestNodeAwaitedByHintedPodsIsKept(t *testing.T) {
	h, pending := newFreshNodeWithPendingPod(t, 10*time.Second)
	pending.Status.NominatedNodeName = "fresh"
	if err := h.client.Status().Update(h.ctx, pending); err != nil {
		t.Fatal(err)
	}
	awaited := func(n int) func() bool {
		return func() bool {
			return len(h.cluster.AwaitedPods()["fresh"]) == n
		}
	}
	h.clock.Step(11 * time.Second) // karp's nomination has run out
	h.eventually("the pending pod awaited on its hinted node", awaited(1))
	h.decide()
	if h.gone("fresh") {
		t.Fatal("a node its pending pods were sent to was disrupted once karp's nomination ran out")
	}
	if c := h.blocked("fresh"); c != nil {
		t.Fatalf("DisruptionBlocked = %s (%s), want no condition while pods are on their way", c.Reason, c.Message)
	}
	// The scheduler tried the pod and failed: the name is cleared, and the
	// node no longer waits for it.
	pending.Status.NominatedNodeName = ""
	if err := h.client.Status().Update(h.ctx, pending); err != nil {
		t.Fatal(err)
	}
	h.eventually("the pod no longer awaited", awaited(0))
	// Gone (its owner scaled down): nothing is on its way to the node.
	if err := h.client.Delete(h.ctx, pending); err != nil {
		t.Fatal(err)
	}
	h.eventually("the pod gone from state", func() bool { return len(h.cluster.ProvisionablePods()) == 0 })
	h.decide()
	if !h.gone("fresh") {
		t.Fatal("an empty node no pending pod names was kept")
	}
}

// A node nominated for pending pods (one karp just launched, whose pods
// are on their way) is kept without a DisruptionBlocked condition or
// event: that state lasts seconds, and recording it cost a status patch
// and an event per node of every scale-up, rewritten as the pod count in
// the message fell.
func TestNominatedNodeIsKeptWithoutRecordingIt(t *testing.T) {
	h, _ := newFreshNodeWithPendingPod(t, time.Hour)
	h.eventually("the pending pod nominated in state", func() bool {
		for _, sn := range h.cluster.Nodes() {
			if sn.Name() == "fresh" && len(sn.Nominated) == 1 {
				return true
			}
		}
		return false
	})
	h.decide()
	if h.gone("fresh") {
		t.Fatal("a node nominated for a pending pod was disrupted")
	}
	if c := h.blocked("fresh"); c != nil {
		t.Fatalf("DisruptionBlocked = %s (%s), want no condition while the node is only nominated", c.Reason, c.Message)
	}
	node := &corev1.Node{}
	if err := h.client.Get(h.ctx, client.ObjectKey{Name: "fresh"}, node); err != nil {
		t.Fatal(err)
	}
	for _, e := range h.base.Events(node) {
		if e.Reason == disruption.ReasonDisruptionBlocked {
			t.Fatalf("event %s %q on a node that is only nominated", e.Reason, e.Note)
		}
	}
}

// newFreshNodeWithPendingPod starts a harness with one running node,
// "fresh", of a NodePool that consolidates at once, and a pending pod karp
// nominated to it for ttl.
func newFreshNodeWithPendingPod(t *testing.T, ttl time.Duration) (*harness, *corev1.Pod) {
	t.Helper()
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "100%"}).
		ConsolidateAfter(karpv1.NewNillableDuration(0)).Obj())
	h.runningNode("fresh", nodeOpts{it: largeType})
	pending := pod("pending", "1")
	h.create(pending)
	h.cluster.Nominate(pending, state.NodeClaimID("fresh"), ttl)
	return h, pending
}
