package scheduling

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReasonsRoundTrip: what Status.Message prints (and a FailedScheduling
// event carries, after the recorder's prefix) parses back into the same
// reasons.
func TestReasonsRoundTrip(t *testing.T) {
	reasons := []Reason{
		PoolReason("gpu", ReasonTaintNotTolerated, "taint nvidia.com/gpu=true:NoSchedule not tolerated"),
		PoolReason("default", ReasonIncompatibleRequirements, "incompatible requirements: requires karpenter.sh/nodepool In [gpu], NodePool allows karpenter.sh/nodepool In [default]"),
		Because(ReasonNoNodePool, "no NodePool can launch nodes"),
		// A message holding the separator stays one reason.
		PoolReason("spot", ReasonNodePoolLimit, "limit cpu=8 reached; 6 in use, 4 requested"),
	}
	msg := NewStatus(Unschedulable, reasons...).Message()
	for _, m := range []string{msg, "Failed to schedule pod, " + msg} {
		if diff := cmp.Diff(reasons, ParseReasons(m)); diff != "" {
			t.Errorf("ParseReasons(%q) (-want,+got):\n%s", m, diff)
		}
	}
	if got := ParseReasons("0/3 nodes are available: 3 Insufficient cpu."); len(got) != 0 {
		t.Errorf("a message without codes parsed into %+v", got)
	}
}
