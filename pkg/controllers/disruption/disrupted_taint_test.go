package disruption_test

import (
	"slices"
	"testing"
)

// TestCandidateIsTaintedBeforeItsReplacementLaunches: when the replacement
// NodeClaim is created, the candidate's Node already carries
// karpenter.sh/disrupted:NoSchedule in the API, so no pod the
// kube-scheduler places meanwhile lands on a node about to go.
func TestCandidateIsTaintedBeforeItsReplacementLaunches(t *testing.T) {
	h := newHarness(t)
	taintedAtCreate := replacedOnce(h, "big", func() bool { return h.tainted("big") })
	if !slices.Equal(taintedAtCreate, []bool{true}) {
		t.Errorf("candidate tainted when its replacement was created: %v, want [true]", taintedAtCreate)
	}
}
