package disruption_test

import (
	"strings"
	"testing"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// Two large nodes nearly full and one small node whose two pods fit in the
// large nodes' slack: deleting the small node saves $0.10 of $2.10 (5%)
// for 3 of the pool's 7 units of disruption (43%). Balanced refuses that
// trade (score 0.11 < 0.5); WhenEmptyOrUnderutilized takes any saving.
func TestBalancedWeighsSavingsAgainstDisruption(t *testing.T) {
	cases := map[string]struct {
		policy      karpv1.ConsolidationPolicy
		wantDeleted bool
	}{
		"Balanced keeps the node":             {policy: karpv1.ConsolidationPolicyBalanced, wantDeleted: false},
		"WhenEmptyOrUnderutilized deletes it": {policy: karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized, wantDeleted: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.readyNodePool(test.MakeNodePool("default").ConsolidationPolicy(tc.policy).Budgets(karpv1.Budget{Nodes: "100%"}).Obj())
			h.runningNode("large-a", nodeOpts{it: largeType}, pod("a", "7"))
			h.runningNode("large-b", nodeOpts{it: largeType}, pod("b", "7"))
			h.runningNode("small", nodeOpts{it: smallType}, pod("s1", "500m"), pod("s2", "500m"))
			h.decide()
			if got := h.gone("small"); got != tc.wantDeleted {
				t.Fatalf("small node deleted = %v, want %v (DisruptionBlocked %+v)", got, tc.wantDeleted, h.blocked("small"))
			}
			if !tc.wantDeleted {
				c := h.blocked("small")
				if c == nil || c.Reason != disruption.BlockedNoCheaper || !strings.Contains(c.Message, "Balanced") {
					t.Errorf("DisruptionBlocked = %+v, want the Balanced score as the reason", c)
				}
			}
		})
	}
}
