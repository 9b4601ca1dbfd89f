package disruption

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// countingRecorder counts the events published.
type countingRecorder struct{ n int }

func (r *countingRecorder) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...interface{}) {
	r.n++
}

// TestRecorderForgetsNodesThatAreGone checks the de-duplication of events
// does not outlive the nodes (and the pods of nodes) it is about: after a
// pass that no longer sees a node, nothing of it is kept, and a node of
// the same UID coming back is reported again.
func TestRecorderForgetsNodesThatAreGone(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	pdb := blocker{BlockedPDB, "PDB default/web prevents evicting pod default/web-1"}
	kept := pureStateNode("kept", "default", stateNodeOpts{blocked: &pdb})
	gone := pureStateNode("gone", "default", stateNodeOpts{blocked: &pdb})
	daemonPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent-1", Namespace: "kube-system", UID: "uid-agent-1"}}
	counter := &countingRecorder{}
	events := newRecorder(counter)
	c := &Controller{events: events}

	events.blocked(kept.Node, pdb)
	events.blocked(gone.Node, pdb)
	(&DaemonSetFit{events: events}).announce(&Candidate{StateNode: gone}, []*corev1.Pod{daemonPod}, Command{})
	if counter.n != 4 {
		t.Fatalf("published %d events, want 4", counter.n)
	}

	// A pass in which the second node (and with it its DaemonSet pod) is gone.
	w := pureWorld(now, []*karpv1.NodePool{poolWithBudgets("default")}, kept)
	w.blocked["kept"] = pdb
	if err := c.explain(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	if counter.n != 4 {
		t.Errorf("the unchanged blocker of the kept node was published again (%d events)", counter.n)
	}
	if got := len(events.last); got != 1 {
		t.Errorf("the recorder remembers %d events after the pass, want 1 (the kept node's)", got)
	}
	events.blocked(gone.Node, pdb)
	if counter.n != 5 {
		t.Errorf("a node that came back was not reported again (%d events, want 5)", counter.n)
	}
}
