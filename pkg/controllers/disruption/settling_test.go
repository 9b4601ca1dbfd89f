package disruption_test

import (
	"testing"
	"time"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestConsolidationDoesNotFillASettlingNode: a node still inside its
// NodePool's consolidateAfter window takes no pod of a consolidation
// candidate (upstream's rule), so the older node, whose pod only fits
// there, stays until the fresh node settles.
func TestConsolidationDoesNotFillASettlingNode(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").ConsolidateAfter(karpv1.NewNillableDuration(time.Hour)).
		Budgets(karpv1.Budget{Nodes: "100%"}).Obj())
	h.runningNode("old", nodeOpts{it: smallType, initialized: h.clock.Now().Add(-2 * time.Hour)}, pod("p1", "500m"))
	h.runningNode("fresh", nodeOpts{it: smallType, initialized: h.clock.Now()}, pod("p2", "500m"))

	h.decide()
	if h.gone("old") || h.gone("fresh") {
		t.Fatal("a node was consolidated onto a node inside its consolidateAfter window")
	}
	if n := len(h.replacements("old", "fresh")); n != 0 {
		t.Errorf("%d replacements launched for old", n)
	}

	h.clock.Step(time.Hour)
	h.decide()
	if !h.gone("old") && !h.gone("fresh") {
		t.Errorf("no node consolidated once consolidateAfter elapsed (old: %+v, fresh: %+v)", h.blocked("old"), h.blocked("fresh"))
	}
}
