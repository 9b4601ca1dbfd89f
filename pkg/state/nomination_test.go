package state_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

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
