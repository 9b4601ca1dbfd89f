package disruption_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func TestEmptyNodeIsDeletedAfterValidation(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "100%"}).Obj())
	h.runningNode("empty", nodeOpts{it: smallType})
	h.runningNode("busy", nodeOpts{it: smallType}, pod("p1", "1500m"))

	h.pass()
	if h.gone("empty") {
		t.Fatal("empty node deleted before the validation delay")
	}
	h.clock.Step(h.opts.ValidationDelay)
	if !h.pass() {
		t.Fatal("no command after validation")
	}
	if !h.gone("empty") {
		t.Error("empty node not deleted")
	}
	if h.gone("busy") {
		t.Error("busy node deleted")
	}
}

func TestEmptyNodeWithinConsolidateAfterStays(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").ConsolidateAfter(karpv1.NewNillableDuration(time.Hour)).Obj())
	h.runningNode("fresh", nodeOpts{it: smallType, initialized: h.clock.Now()})

	h.decide()
	if h.gone("fresh") {
		t.Fatal("node deleted before consolidateAfter elapsed")
	}
	if c := h.blocked("fresh"); c == nil || c.Reason != disruption.BlockedConsolidateAfter {
		t.Fatalf("DisruptionBlocked = %+v, want reason %s", c, disruption.BlockedConsolidateAfter)
	}
	h.clock.Step(time.Hour)
	h.decide()
	if !h.gone("fresh") {
		t.Error("node not deleted once consolidateAfter elapsed")
	}
}

func TestValidationRejectsANodeThatGotAPod(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	h.runningNode("empty", nodeOpts{it: smallType})

	h.pass()
	h.bind(pod("late", "500m"), "empty")
	h.eventually("pod in state", func() bool {
		for _, sn := range h.cluster.Nodes() {
			if sn.Name() == "empty" && len(sn.Pods) == 1 {
				return true
			}
		}
		return false
	})
	h.clock.Step(h.opts.ValidationDelay)
	h.pass()
	if h.gone("empty") {
		t.Fatal("a node that got a pod during validation was deleted")
	}
}

// TestEmptyNodeAPendingPodNeedsStays: emptiness leaves the room pending
// pods need, as consolidation does: of two empty nodes, the one a pending
// pod that fits nowhere else would use stays, the other goes.
func TestEmptyNodeAPendingPodNeedsStays(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "100%"}).Obj())
	h.runningNode("empty-a", nodeOpts{it: smallType})
	h.runningNode("empty-b", nodeOpts{it: smallType})
	h.runningNode("busy", nodeOpts{it: smallType}, pod("p1", "1500m"))
	waiting := pod("waiting", "1500m")
	h.create(waiting)
	waiting.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient cpu."}}
	if err := h.client.Status().Update(h.ctx, waiting); err != nil {
		t.Fatalf("updating pod status: %v", err)
	}
	h.eventually("pending pod in state", func() bool { return len(h.cluster.ProvisionablePods()) == 1 })

	h.decide()
	gone := 0
	for _, n := range []string{"empty-a", "empty-b"} {
		if h.gone(n) {
			gone++
		}
	}
	if gone != 1 {
		t.Errorf("%d empty nodes deleted, want 1 (the other holds the pending pod's room)", gone)
	}
	if h.gone("busy") {
		t.Error("busy node deleted")
	}
}
