package disruption_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

var drifted = []string{karpv1.ConditionTypeDrifted}

// TestStaticDriftReplacesOneForOneWithinBudget: a drifted node of a static
// NodePool is replaced by a NodeClaim of the NodePool's template (its
// cheapest type, whatever the old node's pods need), one at a time under a
// budget of one node, and deleted once the replacement is initialized.
func TestStaticDriftReplacesOneForOneWithinBudget(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("static").Replicas(2).Budgets(karpv1.Budget{Nodes: "1"}).Obj())
	h.runningNode("s1", nodeOpts{pool: "static", it: largeType, conditions: drifted}, pod("p1", "1500m"))
	h.runningNode("s2", nodeOpts{pool: "static", it: largeType, conditions: drifted}, pod("p2", "1500m"))
	if !h.pass() {
		t.Fatal("static drift did not act")
	}
	repl := h.replacements("s1", "s2")
	if len(repl) != 1 {
		t.Fatalf("%d replacements, want 1", len(repl))
	}
	if pool := repl[0].Labels[karpv1.NodePoolLabelKey]; pool != "static" {
		t.Errorf("replacement of NodePool %q, want static", pool)
	}
	if types := templateTypes(&repl[0]); len(types) == 0 || types[0] != smallType.Name {
		t.Errorf("replacement instance types %v, want the template's cheapest (%s) first", types, smallType.Name)
	}
	old := "s1"
	if !h.tainted(old) {
		old = "s2"
	}
	if !h.tainted(old) || h.tainted(otherOf(old)) {
		t.Fatalf("tainted s1=%v s2=%v, want exactly one", h.tainted("s1"), h.tainted("s2"))
	}
	// The budget allows one disruption at a time.
	h.pass()
	if n := len(h.replacements("s1", "s2")); n != 1 {
		t.Fatalf("%d replacements after a second pass, want still 1", n)
	}
	if c := h.blocked(otherOf(old)); c == nil || !strings.Contains(c.Message, "budget") {
		t.Errorf("DisruptionBlocked of %s = %+v, want the budget", otherOf(old), c)
	}
	h.initialize(&repl[0], smallType)
	h.pass()
	if !h.gone(old) {
		t.Errorf("drifted node %s not deleted after its replacement initialized", old)
	}
}

func otherOf(name string) string {
	if name == "s1" {
		return "s2"
	}
	return "s1"
}

func templateTypes(nc *karpv1.NodeClaim) []string {
	for _, r := range nc.Spec.Requirements {
		if r.Key == corev1.LabelInstanceTypeStable {
			return r.Values
		}
	}
	return nil
}

// TestStaticDriftAtTheNodeLimitDeletesFirst: a static NodePool at its
// limits.nodes has no room for a replacement; its drifted node is deleted
// first (the static controller launches the replacement once it is gone).
func TestStaticDriftAtTheNodeLimitDeletesFirst(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("static").Replicas(1).Limits(test.ResourceList("nodes", "1")).Obj())
	h.runningNode("s1", nodeOpts{pool: "static", it: smallType, conditions: drifted}, pod("p1", "500m"))
	if !h.pass() {
		t.Fatal("static drift did not act")
	}
	if n := len(h.replacements("s1")); n != 0 {
		t.Errorf("%d replacements, want none at the node limit", n)
	}
	if !h.gone("s1") {
		t.Error("drifted node not deleted")
	}
}

// TestStaticDriftWaitsForScaleDown: a static NodePool with more nodes than
// replicas is not drifted until its surplus is gone.
func TestStaticDriftWaitsForScaleDown(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("static").Replicas(1).Obj())
	h.runningNode("s1", nodeOpts{pool: "static", it: smallType, conditions: drifted})
	h.runningNode("s2", nodeOpts{pool: "static", it: smallType})
	if h.pass() {
		t.Fatal("static drift acted on an over-replicated NodePool")
	}
	if c := h.blocked("s1"); c == nil || !strings.Contains(c.Message, "scales down first") {
		t.Errorf("DisruptionBlocked = %+v, want the scale-down", c)
	}
}

// TestStaticNodesAreNotConsolidated: an empty node and an underutilized
// one of a static NodePool stay, where the same nodes of a dynamic
// NodePool go.
func TestStaticNodesAreNotConsolidated(t *testing.T) {
	for name, tc := range map[string]struct {
		pool     *karpv1.NodePool
		wantGone bool
	}{
		"dynamic": {pool: test.MakeNodePool("pool").Obj(), wantGone: true},
		"static":  {pool: test.MakeNodePool("pool").Replicas(2).Obj()},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.readyNodePool(tc.pool)
			h.runningNode("empty", nodeOpts{pool: "pool", it: smallType})
			h.runningNode("underused", nodeOpts{pool: "pool", it: largeType}, pod("p1", "500m"))
			h.runningNode("other", nodeOpts{pool: "pool", it: largeType}, pod("p2", "500m"))
			for range 3 {
				h.decide()
			}
			if got := h.gone("empty"); got != tc.wantGone {
				t.Errorf("empty node gone = %v, want %v", got, tc.wantGone)
			}
			if got := h.gone("underused") || h.gone("other"); got != tc.wantGone {
				t.Errorf("an underutilized node gone = %v, want %v", got, tc.wantGone)
			}
		})
	}
}
