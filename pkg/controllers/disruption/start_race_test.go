package disruption_test

import (
	"testing"
	"time"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// TestTaintedCandidateIsNotReprovisionedBeforeItsReplacementExists: the
// candidate is tainted karpenter.sh/disrupted before its replacement is
// created. While the replacement is being created (here: once the
// cluster state has seen the taint), the candidate must not count as
// marked for deletion with pods nobody holds, or the provisioner
// launches capacity for them next to the replacement (a chaos run saw a
// 1→2 replacement become 1→4 this way, under a slow API server).
func TestTaintedCandidateIsNotReprovisionedBeforeItsReplacementExists(t *testing.T) {
	h := newHarness(t)
	type seen struct{ taintSeen, marked bool }
	atCreate := replacedOnce(h, "big", func() seen {
		s := seen{}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) && !s.taintSeen {
			for _, sn := range h.cluster.Nodes() {
				if sn.Node != nil && sn.Node.Name == "big" && hasDisruptedTaint(sn) {
					s = seen{taintSeen: true, marked: sn.MarkedForDeletion}
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		return s
	})
	if len(atCreate) != 1 || !atCreate[0].taintSeen {
		t.Fatalf("state at the replacement's creation: %+v; want the candidate's taint seen", atCreate)
	}
	if atCreate[0].marked {
		t.Error("the candidate counted as marked for deletion before its replacement existed: the provisioner would launch for its pods")
	}
	for _, sn := range h.cluster.Nodes() {
		if sn.Node != nil && sn.Node.Name == "big" && !sn.MarkedForDeletion {
			t.Error("the candidate is not marked for deletion once its replacement exists")
		}
	}
}

func hasDisruptedTaint(sn *state.StateNode) bool {
	for _, taint := range sn.Node.Spec.Taints {
		if taint.Key == karpv1.DisruptedTaintKey {
			return true
		}
	}
	return false
}
