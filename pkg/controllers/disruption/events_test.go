package disruption_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func (h *harness) node(name string) *corev1.Node {
	h.t.Helper()
	node := &corev1.Node{}
	if err := h.client.Get(h.ctx, client.ObjectKey{Name: name}, node); err != nil {
		h.t.Fatal(err)
	}
	return node
}

func (h *harness) podObj(name string) *corev1.Pod {
	h.t.Helper()
	p := &corev1.Pod{}
	if err := h.client.Get(h.ctx, client.ObjectKey{Namespace: "default", Name: name}, p); err != nil {
		h.t.Fatal(err)
	}
	return p
}

// A consolidation command announces itself on its candidate's Node and
// NodeClaim before validation, as upstream's ConsolidationCandidate.
func TestConsolidationCandidateEventOnNodeAndNodeClaim(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "100%"}).Obj())
	claims := map[string]*karpv1.NodeClaim{
		"a": h.runningNode("a", nodeOpts{it: smallType}, pod("p1", "500m")),
		"b": h.runningNode("b", nodeOpts{it: smallType}, pod("p2", "500m")),
	}
	nodes := map[string]*corev1.Node{"a": h.node("a"), "b": h.node("b")}
	h.pass() // computes the command; validation is still pending
	var candidate string
	h.eventually("a ConsolidationCandidate event", func() bool {
		for name, node := range nodes {
			for _, e := range h.base.Events(node) {
				if e.Reason == disruption.ReasonConsolidationCandidate {
					candidate = name
					return true
				}
			}
		}
		return false
	})
	for _, obj := range []client.Object{nodes[candidate], claims[candidate]} {
		note := h.base.EventNote(obj, disruption.ReasonConsolidationCandidate)
		if !strings.HasPrefix(note, "Consolidation candidate: ") || !strings.Contains(note, candidate) || !strings.Contains(note, "(savings: $") {
			t.Errorf("%s note = %q, want the command naming %s and its savings", obj.GetObjectKind().GroupVersionKind().Kind, note, candidate)
		}
	}
}

// A Balanced NodePool that accepts a single-node move says so on the node
// and its NodeClaim with the score, as upstream's ConsolidationApproved.
func TestConsolidationApprovedEventForBalanced(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").ConsolidationPolicy(karpv1.ConsolidationPolicyBalanced).
		Budgets(karpv1.Budget{Nodes: "100%"}).Obj())
	claims := map[string]*karpv1.NodeClaim{
		"a": h.runningNode("a", nodeOpts{it: smallType}, pod("p1", "500m")),
		"b": h.runningNode("b", nodeOpts{it: smallType}, pod("p2", "500m")),
	}
	nodes := map[string]*corev1.Node{"a": h.node("a"), "b": h.node("b")}
	h.decide()
	gone := ""
	for name := range nodes {
		if h.gone(name) {
			gone = name
		}
	}
	if gone == "" {
		t.Fatalf("no node consolidated (a: %+v, b: %+v)", h.blocked("a"), h.blocked("b"))
	}
	// Moving one of two equal nodes saves half the pool's cost for half its
	// disruption: score 1.
	for _, obj := range []client.Object{nodes[gone], claims[gone]} {
		note := h.base.EventNote(obj, disruption.ReasonConsolidationApproved)
		if !strings.HasPrefix(note, "score 1.00 >= threshold 0.50 (k: 2, savings 50.0%, disruption 50.0%)") {
			t.Errorf("ConsolidationApproved note = %q", note)
		}
	}
}

// Pods with a duration-valued karpenter.sh/do-not-disrupt annotation are
// told when it elapses or that it has; a value that is not a positive
// duration is ignored with a warning.
func TestDoNotDisruptAnnotationEvents(t *testing.T) {
	cases := map[string]struct {
		value      string
		wantReason string
		wantNote   string
		wantType   string
	}{
		"not yet over": {value: "3h", wantReason: disruption.ReasonDoNotDisruptUntil,
			wantNote: "The karpenter.sh/do-not-disrupt grace period will elapse at ", wantType: corev1.EventTypeNormal},
		"over": {value: "30m", wantReason: disruption.ReasonDoNotDisruptGracePeriodElapsed,
			wantNote: "The karpenter.sh/do-not-disrupt grace period has elapsed, pod is now disruptable", wantType: corev1.EventTypeNormal},
		"not a duration": {value: "soon", wantReason: disruption.ReasonInvalidDoNotDisruptAnnotation,
			wantNote: `Invalid karpenter.sh/do-not-disrupt annotation: "soon" is not a duration, ignoring annotation`, wantType: corev1.EventTypeWarning},
		"not positive": {value: "-5m", wantReason: disruption.ReasonInvalidDoNotDisruptAnnotation,
			wantNote: `Invalid karpenter.sh/do-not-disrupt annotation: duration "-5m" must be positive, ignoring annotation`, wantType: corev1.EventTypeWarning},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.readyNodePool(test.MakeNodePool("default").Obj())
			p := pod("p1", "1")
			p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: tc.value} // the pod started an hour ago
			h.runningNode("big", nodeOpts{it: largeType}, p)
			h.pass()
			got := h.podObj("p1")
			note := h.base.EventNote(got, tc.wantReason)
			if !strings.HasPrefix(note, tc.wantNote) {
				t.Errorf("note = %q, want %q", note, tc.wantNote)
			}
			for _, e := range h.base.Events(got) {
				if e.Reason == tc.wantReason && e.Type != tc.wantType {
					t.Errorf("event type = %s, want %s", e.Type, tc.wantType)
				}
			}
		})
	}
}

// An invalid do-not-disrupt value is warned about even when another pod of
// the node blocks it first (here one with do-not-disrupt "true", either
// order).
func TestInvalidDoNotDisruptIsWarnedBehindABlocker(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	blocker, invalid := pod("a-blocker", "500m"), pod("b-invalid", "500m")
	blocker.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	invalid.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "maybe"}
	h.runningNode("big", nodeOpts{it: largeType}, blocker, invalid)
	h.pass()
	note := h.base.EventNote(h.podObj("b-invalid"), disruption.ReasonInvalidDoNotDisruptAnnotation)
	if want := `Invalid karpenter.sh/do-not-disrupt annotation: "maybe" is not a duration`; !strings.HasPrefix(note, want) {
		t.Errorf("note = %q, want %q", note, want)
	}
	if c := h.blocked("big"); c == nil || c.Reason != disruption.BlockedDoNotDisrupt {
		t.Errorf("DisruptionBlocked = %+v, want %s", c, disruption.BlockedDoNotDisrupt)
	}
}

// A karpenter.sh/do-not-disrupt annotation on a Node or NodeClaim protects
// it only when "true" (a duration is a pod's). Another value used to be
// ignored silently; it is still ignored, as upstream does, but with a
// warning on the object that carries it.
func TestInvalidNodeDoNotDisruptAnnotationIsNamed(t *testing.T) {
	for name, value := range map[string]string{"a duration": "1h", "a word": "maybe"} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.readyNodePool(test.MakeNodePool("default").Obj())
			nc := h.runningNode("big", nodeOpts{it: largeType, annotations: map[string]string{karpv1.DoNotDisruptAnnotationKey: value}},
				pod("p1", "1"))
			h.runningNode("plain", nodeOpts{it: largeType}, pod("p2", "1"))
			h.pass()
			want := `Invalid karpenter.sh/do-not-disrupt annotation: "` + value + `", ignoring annotation (only "true" protects a node)`
			for _, obj := range []client.Object{h.node("big"), h.nodeClaim(nc.Name)} {
				if note := h.base.EventNote(obj, disruption.ReasonInvalidDoNotDisruptAnnotation); note != want {
					t.Errorf("%T note = %q, want %q", obj, note, want)
				}
			}
			// A node without the annotation is told nothing.
			for _, e := range h.base.Events(h.node("plain")) {
				if e.Reason == disruption.ReasonInvalidDoNotDisruptAnnotation {
					t.Errorf("node without the annotation got %s: %s", e.Reason, e.Note)
				}
			}
		})
	}
}
