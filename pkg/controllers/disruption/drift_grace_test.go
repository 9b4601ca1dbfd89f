package disruption_test

import (
	"testing"
	"time"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestDriftWithTerminationGracePeriodProceedsPastPodBlockers is upstream's
// rule: a drifted node whose NodeClaim has a terminationGracePeriod is
// replaced even though a pod has karpenter.sh/do-not-disrupt or a PDB
// allows no eviction (the drain is then bounded by the grace period);
// without a grace period, or for consolidation, those pods still block.
func TestDriftWithTerminationGracePeriodProceedsPastPodBlockers(t *testing.T) {
	cases := map[string]struct {
		node        string // unique per case: an earlier case's node may still be going
		opts        nodeOpts
		pdb         bool
		wantReplace bool
	}{
		"drifted, grace period, do-not-disrupt pod": {node: "drift-dnd",
			opts: nodeOpts{it: smallType, conditions: []string{karpv1.ConditionTypeDrifted}, terminationGracePeriod: time.Hour}, wantReplace: true},
		"drifted, grace period, blocking PDB": {node: "drift-pdb",
			opts: nodeOpts{it: smallType, conditions: []string{karpv1.ConditionTypeDrifted}, terminationGracePeriod: time.Hour}, pdb: true, wantReplace: true},
		"drifted, no grace period, do-not-disrupt pod": {node: "drift-nograce",
			opts: nodeOpts{it: smallType, conditions: []string{karpv1.ConditionTypeDrifted}}},
		"not drifted, grace period, do-not-disrupt pod (consolidation)": {node: "consolidate-dnd",
			opts: nodeOpts{it: largeType, terminationGracePeriod: time.Hour}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.readyNodePool(test.MakeNodePool("default").Obj())
			p := pod("p1", "1500m")
			if tc.pdb {
				h.pdb("web", "web", 0)
				p = withLabel(p, "app", "web")
			} else {
				p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
			}
			h.runningNode(tc.node, tc.opts, p)
			h.decide()
			// An earlier case's replacement may still be going: count any.
			replaced := h.tainted(tc.node) && len(h.replacements(tc.node)) >= 1
			if replaced != tc.wantReplace {
				t.Fatalf("replaced = %v, want %v (DisruptionBlocked = %+v)", replaced, tc.wantReplace, h.blocked(tc.node))
			}
			if !tc.wantReplace {
				if c := h.blocked(tc.node); c == nil || (c.Reason != disruption.BlockedDoNotDisrupt && c.Reason != disruption.BlockedPDB) {
					t.Errorf("DisruptionBlocked = %+v, want the pod's blocker", c)
				}
			}
		})
	}
}
