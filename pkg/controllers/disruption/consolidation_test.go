package disruption_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func TestDeleteWhenPodsFitElsewhere(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "100%"}).Obj())
	h.runningNode("a", nodeOpts{it: smallType}, pod("p1", "500m"))
	h.runningNode("b", nodeOpts{it: smallType}, pod("p2", "500m"))
	h.decide()
	gone := 0
	for _, n := range []string{"a", "b"} {
		if h.gone(n) {
			gone++
		}
	}
	if gone != 1 {
		t.Fatalf("%d nodes deleted, want 1 (a: %+v, b: %+v)", gone, h.blocked("a"), h.blocked("b"))
	}
	if n := len(h.replacements("a", "b")); n != 0 {
		t.Errorf("%d replacements launched for a delete", n)
	}
}

func TestReplaceWithCheaperNodeThenDelete(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	h.runningNode("big", nodeOpts{it: largeType}, pod("p1", "1"))
	h.decide()

	repl := h.replacements("big")
	if len(repl) != 1 {
		t.Fatalf("%d replacements, want 1", len(repl))
	}
	if got := instanceTypes(&repl[0]); got != "small" {
		t.Errorf("replacement may launch %q, want only small", got)
	}
	if !h.tainted("big") {
		t.Error("candidate not tainted while its replacement launches")
	}
	if nc := h.nodeClaim("big"); nc == nil || !nc.StatusConditions().IsTrue(karpv1.ConditionTypeDisruptionReason) {
		t.Error("candidate has no DisruptionReason condition")
	}
	if h.gone("big") {
		t.Fatal("candidate deleted before its replacement initialized")
	}
	h.pass()
	if h.gone("big") {
		t.Fatal("candidate deleted before its replacement initialized")
	}
	h.initialize(&repl[0], smallType)
	h.pass()
	if !h.gone("big") {
		t.Error("candidate not deleted after its replacement initialized")
	}
}

func TestReplaceOneNodeByTwoSmallerOnes(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	h.runningNode("big", nodeOpts{it: largeType}, pod("p1", "1500m"), pod("p2", "1500m"))
	h.decide()
	repl := h.replacements("big")
	if len(repl) != 2 {
		t.Fatalf("%d replacements, want 2 (two small nodes cost $0.20/h against $1.00/h)", len(repl))
	}
	for i := range repl {
		h.initialize(&repl[i], smallType)
	}
	h.pass()
	if !h.gone("big") {
		t.Error("candidate not deleted after both replacements initialized")
	}
}

func TestMultiNodeConsolidationMergesNodes(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "100%"}).Obj())
	names := []string{"a", "b", "c"}
	for i, n := range names {
		h.runningNode(n, nodeOpts{it: largeType}, pod("p"+string(rune('1'+i)), "500m"))
	}
	h.decide()
	repl := h.replacements(names...)
	tainted := 0
	for _, n := range names {
		if h.tainted(n) || h.gone(n) {
			tainted++
		}
	}
	if tainted != 3 || len(repl) != 1 {
		t.Fatalf("%d candidates disrupted with %d replacements, want 3 replaced by 1", tainted, len(repl))
	}
	if got := instanceTypes(&repl[0]); !strings.HasPrefix(got, "small") {
		t.Errorf("replacement launches %q first, want small", got)
	}
}

func TestNoCheaperPlacementIsExplained(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	h.runningNode("snug", nodeOpts{it: smallType}, pod("p1", "1500m"))
	h.decide()
	if h.gone("snug") || len(h.replacements("snug")) != 0 {
		t.Fatal("node disrupted without a cheaper placement")
	}
	c := h.blocked("snug")
	if c == nil || c.Reason != disruption.BlockedNoCheaper || !strings.Contains(c.Message, "no cheaper placement") {
		t.Fatalf("DisruptionBlocked = %+v, want a no-cheaper-placement reason", c)
	}
}

// TestReplacedPodIsSearchedAgain: a search that found nothing is not run
// again while its input is unchanged, and a pod replaced by a smaller one
// (a Deployment's rolling update to smaller requests, a VPA) changes it
// though the node keeps as many pods.
func TestReplacedPodIsSearchedAgain(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	big := pod("big", "7")
	h.runningNode("node", nodeOpts{it: largeType}, big)
	h.decide()
	if c := h.blocked("node"); c == nil || c.Reason != disruption.BlockedNoCheaper || len(h.replacements("node")) != 0 {
		t.Fatalf("a node whose only pod needs it was disrupted or not explained: DisruptionBlocked = %+v", c)
	}

	if err := h.client.Delete(h.ctx, big, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	h.bind(pod("small", "500m"), "node")
	h.eventually("the small pod in place of the big one", func() bool {
		for _, sn := range h.cluster.Nodes() {
			if sn.Name() == "node" {
				return len(sn.Pods) == 1 && sn.Pods[0].Name == "small" && podsStarted(sn.Pods)
			}
		}
		return false
	})
	h.clock.Step(time.Minute)
	h.decide()
	if repl := h.replacements("node"); len(repl) != 1 || instanceTypes(&repl[0]) != "small" {
		t.Fatalf("%d replacements after the pod shrank (DisruptionBlocked = %+v), want one small node", len(repl), h.blocked("node"))
	}
}

func TestWhenEmptyPolicyKeepsUnderutilizedNodes(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmpty).Obj())
	h.runningNode("big", nodeOpts{it: largeType}, pod("p1", "1"))
	h.decide()
	if len(h.replacements("big")) != 0 || h.gone("big") {
		t.Fatal("WhenEmpty pool consolidated a non-empty node")
	}
	if c := h.blocked("big"); c == nil || c.Reason != disruption.BlockedPolicy {
		t.Fatalf("DisruptionBlocked = %+v, want reason %s", c, disruption.BlockedPolicy)
	}
}

func TestProtectedNodesAreNotCandidates(t *testing.T) {
	cases := map[string]struct {
		setup      func(h *harness)
		wantReason string
		wantIn     string
	}{
		"pod do-not-disrupt": {
			setup: func(h *harness) {
				p := pod("p1", "1")
				p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
				h.runningNode("big", nodeOpts{it: largeType}, p)
			},
			wantReason: disruption.BlockedDoNotDisrupt, wantIn: "default/p1",
		},
		"pod do-not-disrupt for a duration not yet over": {
			setup: func(h *harness) {
				p := pod("p1", "1")
				p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "3h"}
				h.runningNode("big", nodeOpts{it: largeType}, p)
			},
			wantReason: disruption.BlockedDoNotDisrupt, wantIn: "default/p1",
		},
		"node do-not-disrupt": {
			setup: func(h *harness) {
				h.runningNode("big", nodeOpts{it: largeType, annotations: map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}}, pod("p1", "1"))
			},
			wantReason: disruption.BlockedDoNotDisrupt, wantIn: "node has",
		},
		"PDB with no disruptions allowed": {
			setup: func(h *harness) {
				h.pdb("web", "web", 0)
				h.runningNode("big", nodeOpts{it: largeType}, withLabel(pod("p1", "1"), "app", "web"))
			},
			wantReason: disruption.BlockedPDB, wantIn: "PDB default/web",
		},
		"two PDBs": {
			setup: func(h *harness) {
				h.pdb("web-a", "web", 1)
				h.pdb("web-b", "web", 1)
				h.runningNode("big", nodeOpts{it: largeType}, withLabel(pod("p1", "1"), "app", "web"))
			},
			wantReason: disruption.BlockedPDB, wantIn: "more than one PDB",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.readyNodePool(test.MakeNodePool("default").Obj())
			tc.setup(h)
			h.decide()
			if h.gone("big") || len(h.replacements("big")) != 0 || h.tainted("big") {
				t.Fatal("protected node disrupted")
			}
			c := h.blocked("big")
			if c == nil || c.Reason != tc.wantReason || !strings.Contains(c.Message, tc.wantIn) {
				t.Fatalf("DisruptionBlocked = %+v, want reason %s mentioning %q", c, tc.wantReason, tc.wantIn)
			}
		})
	}
}

func TestExpiredDoNotDisruptDurationAllowsConsolidation(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	p := pod("p1", "1")
	p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "30m"} // the pod started an hour ago
	h.runningNode("big", nodeOpts{it: largeType}, p)
	h.decide()
	if len(h.replacements("big")) != 1 {
		t.Fatalf("node not consolidated after its pod's do-not-disrupt duration passed (DisruptionBlocked = %+v)", h.blocked("big"))
	}
}

func withLabel(p *corev1.Pod, k, v string) *corev1.Pod {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[k] = v
	return p
}

// instanceTypes is the comma-joined instance-type requirement values.
func instanceTypes(nc *karpv1.NodeClaim) string {
	for _, r := range nc.Spec.Requirements {
		if r.Key == corev1.LabelInstanceTypeStable {
			return strings.Join(r.Values, ",")
		}
	}
	return ""
}
