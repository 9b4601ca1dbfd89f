package invariants

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestLossesAreConfirmedWithTheAPIServer checks the reads that confirm
// what the watches suggest: a pod still bound to a gone node is lost
// only while the API server still has it there, neither deleting nor
// evicted; a direct deletion is explained once its ReplicaSet is gone.
func TestLossesAreConfirmedWithTheAPIServer(t *testing.T) {
	ns := namespace(t, "confirm")
	readyNode(t, "confirm-node", "")
	m := startMonitor(t)
	ctx := t.Context()
	pod := runningPod(t, podSpec{ns: ns, name: "a", node: "confirm-node"})

	for _, tc := range []struct {
		name string
		node string
		want bool
	}{
		{"still bound there", "confirm-node", true},
		{"bound elsewhere", "other-node", false},
	} {
		if got, err := m.stillOn(ctx, pod, tc.node); err != nil || got != tc.want {
			t.Errorf("%s: stillOn = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	if err := evict(t, pod); err != nil {
		t.Fatal(err)
	}
	if got, err := m.stillOn(ctx, pod, "confirm-node"); err != nil || got {
		t.Errorf("evicted: stillOn = %v, %v; want false", got, err)
	}
	if err := env.Client.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	if got, err := m.stillOn(ctx, pod, "confirm-node"); err != nil || got {
		t.Errorf("deleted: stillOn = %v, %v; want false", got, err)
	}

	rs, ref := replicaSet(t, ns, "app", 2)
	owned := runningPod(t, podSpec{ns: ns, name: "owned", node: "confirm-node", owner: ref})
	d := pendingDeletion{pod: owned, others: 0, replicas: 2}
	if why, err := m.ownerExplains(ctx, d); err != nil || why {
		t.Errorf("a ReplicaSet that wants its pod: ownerExplains = %v, %v; want false", why, err)
	}
	if err := env.Client.Delete(ctx, rs); err != nil {
		t.Fatal(err)
	}
	if why, err := m.ownerExplains(ctx, d); err != nil || !why {
		t.Errorf("a deleted ReplicaSet: ownerExplains = %v, %v; want true", why, err)
	}
}
