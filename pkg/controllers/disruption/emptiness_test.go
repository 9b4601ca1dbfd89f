package disruption_test

import (
	"testing"
	"time"

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
