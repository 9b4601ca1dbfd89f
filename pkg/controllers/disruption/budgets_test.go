package disruption_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func TestBudgetsLimitEmptiness(t *testing.T) {
	always := "* * * * *"
	never := "0 0 1 1 *" // a minute-long window on January 1st
	cases := map[string]struct {
		budgets     []karpv1.Budget
		nodes       int
		wantDeleted int
	}{
		"count":                        {budgets: []karpv1.Budget{{Nodes: "1"}}, nodes: 3, wantDeleted: 1},
		"percent rounds up":            {budgets: []karpv1.Budget{{Nodes: "50%"}}, nodes: 3, wantDeleted: 2},
		"zero in an active schedule":   {budgets: []karpv1.Budget{{Nodes: "0", Schedule: &always, Duration: &metav1Duration}}, nodes: 2, wantDeleted: 0},
		"zero outside its schedule":    {budgets: []karpv1.Budget{{Nodes: "0", Schedule: &never, Duration: &oneMinute}, {Nodes: "1"}}, nodes: 2, wantDeleted: 1},
		"zero for another reason":      {budgets: []karpv1.Budget{{Nodes: "0", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}}}, nodes: 2, wantDeleted: 2},
		"the most restrictive applies": {budgets: []karpv1.Budget{{Nodes: "100%"}, {Nodes: "1"}}, nodes: 3, wantDeleted: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.readyNodePool(test.MakeNodePool("default").Budgets(tc.budgets...).Obj())
			var names []string
			for i := range tc.nodes {
				names = append(names, fmt.Sprintf("empty-%d", i))
				h.runningNode(names[i], nodeOpts{it: smallType})
			}
			h.decide()
			deleted := 0
			for _, n := range names {
				if h.gone(n) {
					deleted++
				} else if c := h.blocked(n); c == nil || c.Reason != disruption.BlockedBudget || !strings.Contains(c.Message, "budget") {
					t.Errorf("kept node %s: DisruptionBlocked = %+v, want reason %s", n, c, disruption.BlockedBudget)
				}
			}
			if deleted != tc.wantDeleted {
				t.Errorf("deleted %d nodes, want %d", deleted, tc.wantDeleted)
			}
		})
	}
}

func TestBudgetCountsNodesAlreadyDisrupting(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "1"}).Obj())
	names := []string{"empty-a", "empty-b"}
	for _, n := range names {
		h.runningNode(n, nodeOpts{it: smallType, finalizers: []string{"test.karp.sh/hold"}})
	}
	t.Cleanup(func() { h.releaseFinalizers(names...) })
	h.decide()
	h.eventually("a node deleting in state", func() bool {
		for _, sn := range h.cluster.Nodes() {
			if sn.MarkedForDeletion {
				return true
			}
		}
		return false
	})
	h.clock.Step(time.Minute)
	h.decide()
	deleted := 0
	for _, n := range names {
		if h.gone(n) {
			deleted++
		}
	}
	if deleted != 1 {
		t.Fatalf("%d nodes deleting, want 1: the deleting node must use up the budget", deleted)
	}
}

func metav1Dur(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }

var (
	metav1Duration = metav1Dur(time.Hour)
	oneMinute      = metav1Dur(time.Minute)
)
