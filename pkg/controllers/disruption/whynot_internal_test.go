package disruption

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// whyNotCase is one node's state and what whyNot must decide for it.
type whyNotCase struct {
	node state.StateNode
	// blockedNow is what the pass found against the node, if anything.
	blockedNow *blocker
	queued     bool
	want       *explanation // nil: nothing recorded
}

func TestWhyNotDecidesEachNodesCondition(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	budget := blocker{BlockedBudget, "NodePool default's disruption budget allows no more Empty disruptions now"}
	pdb := blocker{BlockedPDB, "PDB default/web prevents evicting pod default/web-1"}
	after := blocker{BlockedConsolidateAfter, "consolidateAfter (1h0m0s) has not elapsed since the last pod event"}
	noCheaper := blocker{BlockedNoCheaper, "no cheaper placement"}
	nominated := blocker{BlockedNominated, "node is nominated for 2 pending pod(s)"}
	tests := map[string]whyNotCase{
		"a new blocker is written": {
			node:       *pureStateNode("n", "default", stateNodeOpts{}),
			blockedNow: &budget,
			want:       &explanation{blocked: budget, write: true},
		},
		"an unchanged blocker is not written again": {
			node:       *pureStateNode("n", "default", stateNodeOpts{blocked: &pdb}),
			blockedNow: &pdb,
			want:       &explanation{blocked: pdb},
		},
		"another blocker replaces the condition": {
			node:       *pureStateNode("n", "default", stateNodeOpts{blocked: &pdb}),
			blockedNow: &budget,
			want:       &explanation{blocked: budget, write: true},
		},
		"a node-only reason that no longer holds is cleared": {
			node: *pureStateNode("n", "default", stateNodeOpts{blocked: &after}),
			want: &explanation{clear: true, forget: true},
		},
		"a search result stands until the next search": {
			node: *pureStateNode("n", "default", stateNodeOpts{blocked: &noCheaper}),
		},
		"a node being disrupted loses its condition": {
			node:   *pureStateNode("n", "default", stateNodeOpts{blocked: &budget}),
			queued: true,
			want:   &explanation{clear: true, forget: true},
		},
		"a marked node without a condition only forgets its events": {
			node: *pureStateNode("n", "default", stateNodeOpts{marked: true}),
			want: &explanation{forget: true},
		},
		"a nominated node is kept without a record": {
			node:       *pureStateNode("n", "default", stateNodeOpts{}),
			blockedNow: &nominated,
		},
		"an unmanaged node is left alone": {
			node:       state.StateNode{Node: pureStateNode("n", "default", stateNodeOpts{}).Node},
			blockedNow: &budget,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			sn := tc.node
			w := pureWorld(now, nil, &sn)
			if tc.blockedNow != nil {
				w.record(sn.Name(), *tc.blockedNow)
			}
			queued := map[string]bool{}
			if tc.queued {
				queued[sn.ID()] = true
			}
			got := whyNot(t.Context(), w, queued)
			var want []explanation
			if tc.want != nil {
				e := *tc.want
				e.node = &sn
				want = append(want, e)
			}
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(explanation{}, blocker{}), cmp.Comparer(func(a, b *state.StateNode) bool { return a == b })); diff != "" {
				t.Errorf("explanations (-want,+got):\n%s", diff)
			}
		})
	}
}

// A candidate whose consolidateAfter has not elapsed gets that reason
// even when no consolidation method ran this pass.
func TestWhyNotRefreshesTheConsolidationFilters(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	hour := time.Hour
	np := poolWithBudgets("default")
	np.Spec.Disruption.ConsolidateAfter = karpv1.NillableDuration{Duration: &hour}
	sn := pureStateNode("n", "default", stateNodeOpts{})
	sn.NodeClaim.StatusConditions().SetFalse(karpv1.ConditionTypeConsolidatable, "PodEvents", "a pod started")
	w := pureWorld(now, []*karpv1.NodePool{np}, sn)
	w.candidates = []*Candidate{{StateNode: sn, NodePool: np}}
	got := whyNot(t.Context(), w, nil)
	if len(got) != 1 || got[0].blocked.reason != BlockedConsolidateAfter || !got[0].write {
		t.Errorf("explanations = %+v, want the ConsolidateAfter blocker written", got)
	}
}
