package disruption_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func TestQueueRollsBackWhenReplacementsNeverInitialize(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	h.runningNode("big", nodeOpts{it: largeType}, pod("p1", "1"))
	h.decide()
	repl := h.replacements("big")
	if len(repl) != 1 || !h.tainted("big") {
		t.Fatalf("command not started: %d replacements, tainted=%v", len(repl), h.tainted("big"))
	}
	h.clock.Step(h.opts.QueueTimeout + 1)
	h.pass()
	if h.gone("big") {
		t.Fatal("candidate deleted although its replacement never initialized")
	}
	if h.tainted("big") {
		t.Error("candidate still tainted after rollback")
	}
	if nc := h.nodeClaim("big"); nc == nil || nc.StatusConditions().Get(karpv1.ConditionTypeDisruptionReason) != nil {
		t.Error("candidate keeps its DisruptionReason after rollback")
	}
	if h.gone(repl[0].Name) {
		t.Error("the replacement was deleted on rollback; upstream keeps it, so one that initializes late is used")
	}
}

func TestQueueRollsBackWhenReplacementIsDeleted(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	h.runningNode("big", nodeOpts{it: largeType}, pod("p1", "1"))
	h.decide()
	repl := h.replacements("big")
	if len(repl) != 1 {
		t.Fatalf("%d replacements, want 1", len(repl))
	}
	if err := h.client.Delete(h.ctx, &repl[0]); err != nil {
		t.Fatal(err)
	}
	// The controller reads NodeClaims through the manager's cache: wait
	// until it, not only the API server, has seen the deletion.
	h.eventually("replacement gone from the controller's view", func() bool {
		nc := &karpv1.NodeClaim{}
		err := h.mgr.GetClient().Get(h.ctx, types.NamespacedName{Name: repl[0].Name}, nc)
		return apierrors.IsNotFound(err) || (err == nil && nc.DeletionTimestamp != nil)
	})
	h.pass()
	if h.gone("big") || h.tainted("big") {
		t.Fatal("candidate not restored after its replacement was deleted")
	}
}

func TestRestartClearsStaleDisruption(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	h.runningNode("big", nodeOpts{it: largeType}, pod("p1", "1"))
	h.decide()
	repl := h.replacements("big")
	if len(repl) != 1 || !h.tainted("big") {
		t.Fatal("command not started")
	}
	// The process dies mid-command: a new one knows nothing of the queue.
	h.restart()
	h.eventually("restarted state synced with the tainted node", func() bool {
		synced, err := h.cluster.Synced(h.ctx)
		if err != nil || !synced {
			return false
		}
		for _, sn := range h.cluster.Nodes() {
			if sn.Name() == "big" && sn.Node != nil && len(sn.Node.Spec.Taints) > 0 {
				return true
			}
		}
		return false
	})
	h.pass()
	if h.tainted("big") {
		t.Fatal("the restarted controller left the candidate tainted")
	}
	if nc := h.nodeClaim("big"); nc == nil || nc.StatusConditions().Get(karpv1.ConditionTypeDisruptionReason) != nil {
		t.Fatal("the restarted controller left the DisruptionReason")
	}
	if h.gone("big") {
		t.Fatal("the restarted controller deleted the candidate without a command")
	}
}

func TestStaleTaintOnADeletingNodeIsKept(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	h.runningNode("leaving", nodeOpts{it: smallType, finalizers: []string{"test.karp.sh/hold"},
		taints: []corev1.Taint{karpv1.DisruptedNoScheduleTaint}}, pod("p1", "1500m"))
	t.Cleanup(func() { h.releaseFinalizers("leaving") })
	if err := h.client.Delete(h.ctx, h.nodeClaim("leaving")); err != nil {
		t.Fatal(err)
	}
	h.eventually("deletion in state", func() bool {
		for _, sn := range h.cluster.Nodes() {
			if sn.NodeClaim != nil && sn.NodeClaim.Name == "leaving" && sn.NodeClaim.DeletionTimestamp != nil {
				return true
			}
		}
		return false
	})
	h.pass()
	if !h.tainted("leaving") {
		t.Fatal("the taint of a node being terminated was removed")
	}
}

func TestDriftReplacesWithoutValidationDelay(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	h.runningNode("old", nodeOpts{it: smallType, conditions: []string{karpv1.ConditionTypeDrifted}}, pod("p1", "1500m"))
	if !h.pass() {
		t.Fatal("drift did not act in the first pass")
	}
	repl := h.replacements("old")
	if len(repl) != 1 || !h.tainted("old") {
		t.Fatalf("drift: %d replacements, tainted=%v; want 1 and tainted", len(repl), h.tainted("old"))
	}
	h.initialize(&repl[0], smallType)
	h.pass()
	if !h.gone("old") {
		t.Error("drifted node not deleted after its replacement initialized")
	}
}

func TestDriftRespectsBudget(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "0", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}}).Obj())
	h.runningNode("old", nodeOpts{it: smallType, conditions: []string{karpv1.ConditionTypeDrifted}}, pod("p1", "1500m"))
	h.pass()
	if len(h.replacements("old")) != 0 || h.tainted("old") {
		t.Fatal("drift ignored a zero budget")
	}
}

// A drift whose replacement never initializes is rolled back, leaving the
// old node untainted and serving and, as upstream, the replacement in
// place; the node is not retried at once, and not even after its backoff
// while its pods would move onto the replacement still initializing: no
// loop of replacements that never initialize. When the replacement
// initializes at last, the drift completes onto it (emptiness is off, so
// the empty replacement is not removed first).
func TestDriftWhoseReplacementNeverInitializesBacksOff(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").ConsolidateAfter(karpv1.MustParseNillableDuration(karpv1.Never)).Obj())
	h.runningNode("old", nodeOpts{it: smallType, conditions: []string{karpv1.ConditionTypeDrifted}}, pod("p1", "1500m"))
	h.pass()
	first := h.replacements("old")
	if len(first) != 1 {
		t.Fatalf("drift: %d replacements, want 1", len(first))
	}
	h.launch(&first[0], smallType)
	h.clock.Step(h.opts.QueueTimeout + 1)
	h.pass()
	for range 3 {
		h.pass()
		h.clock.Step(h.opts.QueueTimeout / 2)
	}
	if h.gone("old") || h.tainted("old") {
		t.Fatalf("old node gone=%v tainted=%v after the rollback; want it kept and untainted", h.gone("old"), h.tainted("old"))
	}
	if repl := liveReplacements(h, "old"); len(repl) != 1 || repl[0].Name != first[0].Name {
		t.Fatalf("replacements after the rollback: %v; want only the first, %s, kept", names(repl), first[0].Name)
	}
	if h.tainted("old") {
		t.Fatal("old node tainted again during its backoff")
	}
	h.clock.Step(2 * h.opts.QueueTimeout)
	h.pass()
	if repl := liveReplacements(h, "old"); len(repl) != 1 || h.tainted("old") {
		t.Fatalf("after the backoff: replacements %v, tainted=%v; want no new one while the first still initializes", names(repl), h.tainted("old"))
	}
	h.initialize(&first[0], smallType)
	h.pass()
	if !h.gone("old") {
		t.Fatal("the drifted node was kept after its replacement initialized")
	}
	if repl := liveReplacements(h, "old"); len(repl) != 1 {
		t.Fatalf("replacements %v; want the drift to use the first one", names(repl))
	}
}

// names are the NodeClaims' names.
func names(ncs []karpv1.NodeClaim) []string {
	out := make([]string, 0, len(ncs))
	for _, nc := range ncs {
		out = append(out, nc.Name)
	}
	return out
}

// liveReplacements are the replacements not being deleted.
func liveReplacements(h *harness, existing ...string) []karpv1.NodeClaim {
	var out []karpv1.NodeClaim
	for _, nc := range h.replacements(existing...) {
		if nc.DeletionTimestamp == nil {
			out = append(out, nc)
		}
	}
	return out
}
