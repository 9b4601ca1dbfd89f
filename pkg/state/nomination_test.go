package state_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestReleaseNominationsFreesOnlyThatNode: a rolled-back disruption
// releases the nominations to its replacement; pods nominated elsewhere
// keep theirs.
func TestReleaseNominationsFreesOnlyThatNode(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	cluster := state.NewCluster(clk, nil)
	moved, other := test.MakePod("moved").NodeName("old").Obj(), test.MakePod("other").Obj()
	repl, elsewhere := state.NodeClaimID("repl"), state.NodeClaimID("elsewhere")
	cluster.Nominate(moved, repl, time.Minute)
	cluster.Nominate(other, elsewhere, time.Minute)

	if got := cluster.ReleaseNominations(repl); got != 1 {
		t.Fatalf("ReleaseNominations(%s) = %d, want 1", repl, got)
	}
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "default", Name: name} }
	if got := cluster.NominatedNode(key("moved")); got != "" {
		t.Errorf("pod moved still nominated to %q after its node's nominations were released", got)
	}
	if got := cluster.NominatedNode(key("other")); got != elsewhere {
		t.Errorf("pod other nominated to %q, want %q kept", got, elsewhere)
	}
	if got := cluster.ReleaseNominations(repl); got != 0 {
		t.Errorf("second ReleaseNominations(%s) = %d, want 0", repl, got)
	}
}

// TestRenewNominationsRevivesThoseTheHoldOutlasted: a batch hold longer
// than the nomination TTL lets the nominations to its node run out; the
// lift renews them all for a TTL, and leaves those to other nodes alone.
func TestRenewNominationsRevivesThoseTheHoldOutlasted(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	cluster := state.NewCluster(clk, nil)
	held, other := state.NodeClaimID("held"), state.NodeClaimID("other")
	early, late, elsewhere := test.MakePod("early").Obj(), test.MakePod("late").Obj(), test.MakePod("elsewhere").Obj()
	cluster.Nominate(early, held, 20*time.Second)
	clk.Step(15 * time.Second)
	cluster.NominateUnhinted(late, held, 20*time.Second)
	cluster.Nominate(elsewhere, other, 20*time.Second)
	clk.Step(10 * time.Second) // early ran out, late has 10 s left
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "default", Name: name} }
	if got := cluster.NominatedNode(key("early")); got != "" {
		t.Fatalf("early nominated to %q past its TTL", got)
	}
	if got := cluster.RenewNominations(held, 20*time.Second); got != 2 {
		t.Errorf("RenewNominations(%s) = %d, want 2 (one run out, one not)", held, got)
	}
	clk.Step(15 * time.Second)
	for _, name := range []string{"early", "late"} {
		if got := cluster.NominatedNode(key(name)); got != held {
			t.Errorf("%s nominated to %q 15 s after the renewal, want %q", name, got, held)
		}
	}
	if got := cluster.HintedNode(key("late")); got != "" {
		t.Errorf("the unhinted nomination of late got a hint (%q) from its renewal", got)
	}
	if got := cluster.NominatedNode(key("elsewhere")); got != "" {
		t.Errorf("elsewhere nominated to %q: another node's renewal extended it", got)
	}
	clk.Step(10 * time.Second)
	if got := cluster.NominatedNode(key("early")); got != "" {
		t.Errorf("early nominated to %q a TTL after the renewal", got)
	}
}

// TestAwaitedPodsAreThosePendingWithTheNodesName: a pending pod whose
// status.nominatedNodeName names a node is awaited there once karp's own
// nomination of it ran out (not before: it is then among the node's
// nominated pods), and never takes room in the simulation's snapshot; a
// bound pod, or one whose name was cleared, is not awaited.
func TestAwaitedPodsAreThosePendingWithTheNodesName(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)
	cluster := state.NewCluster(clk, nil)
	cluster.UpdateNodeClaim(test.MakeNodeClaim("nc").NodePool("pool").ProviderID("fake://nc").NodeName("n").
		Condition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", now.Add(-time.Minute)).Obj())
	cluster.UpdateNode(test.MakeNode("n").ProviderID("fake://nc").Label(karpv1.NodePoolLabelKey, "pool").Obj())
	hinted, cleared, bound := test.MakePod("hinted").Obj(), test.MakePod("cleared").Obj(), test.MakePod("bound").NodeName("n").Obj()
	hinted.Status.NominatedNodeName = "n"
	bound.Status.NominatedNodeName = "n"
	for _, p := range []*corev1.Pod{hinted, cleared, bound} {
		cluster.UpdatePod(p)
	}
	cluster.Nominate(hinted, state.NodeClaimID("nc"), 10*time.Second)
	nominated := func() int {
		t.Helper()
		nodes := cluster.Nodes()
		if len(nodes) != 1 {
			t.Fatalf("%d state nodes, want 1", len(nodes))
		}
		return len(nodes[0].Nominated)
	}
	awaited := func() string { return fmt.Sprint(awaitedNames(cluster.AwaitedPods())) }
	if n, got := nominated(), awaited(); n != 1 || got != "map[]" {
		t.Fatalf("while karp's nomination lasts: %d nominated, awaited %s; want 1 and none", n, got)
	}
	clk.Step(11 * time.Second)
	if n, got := nominated(), awaited(); n != 0 || got != "map[n:[hinted]]" {
		t.Fatalf("after karp's nomination ran out: %d nominated, awaited %s; want 0 and map[n:[hinted]]", n, got)
	}
	sim, _ := cluster.Snapshot()
	if got := len(sim[0].Pods); got != 1 {
		t.Errorf("snapshot node holds %d pods, want only the bound one", got)
	}
	hinted = hinted.DeepCopy()
	hinted.Status.NominatedNodeName = ""
	cluster.UpdatePod(hinted)
	if got := awaited(); got != "map[]" {
		t.Errorf("awaited %s after the scheduler cleared the name, want none", got)
	}
}

// awaitedNames is AwaitedPods with pod names.
func awaitedNames(byNode map[string][]*corev1.Pod) map[string][]string {
	out := map[string][]string{}
	for node, pods := range byNode {
		out[node] = names(pods)
	}
	return out
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// TestATerminatingPodKeepsNoRoom: a pod evicted from a node being replaced
// is nominated to the replacement, but once it is terminating it lands
// nowhere (its owner makes a new pod, which needs that room): it is no
// longer among the replacement's nominated pods.
func TestATerminatingPodKeepsNoRoom(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cluster := state.NewCluster(clocktesting.NewFakeClock(now), nil)
	cluster.UpdateNodeClaim(test.MakeNodeClaim("repl").NodePool("pool").Obj())
	evicted := test.MakePod("evicted").NodeName("old").Obj()
	cluster.UpdatePod(evicted)
	cluster.Nominate(evicted, state.NodeClaimID("repl"), time.Minute)
	if sn := cluster.Nodes(); len(sn) != 1 || len(sn[0].Nominated) != 1 {
		t.Fatalf("before the eviction: %d state nodes, want 1 with the pod nominated", len(sn))
	}
	evicted = evicted.DeepCopy()
	evicted.DeletionTimestamp = &metav1.Time{Time: now}
	cluster.UpdatePod(evicted)
	if got := cluster.Nodes()[0].Nominated; len(got) != 0 {
		t.Errorf("the replacement keeps room for %v, a terminating pod", names(got))
	}
}
