package disruption

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// TestWithinRolloutBudgetsKeepsAMultiNodeCommandWithinEachBudget: the
// candidates one multi-node command takes hold, per controller, no more
// available pods than its budget allows now; a candidate that would go
// over is left out (with the controller named) and the search goes on
// with the next.
func TestWithinRolloutBudgetsKeepsAMultiNodeCommandWithinEachBudget(t *testing.T) {
	budget := func(uid string, maxUnavailable, unavailable int) *scheduling.RolloutBudget {
		return &scheduling.RolloutBudget{RolloutController: scheduling.RolloutController{Kind: "Deployment", Namespace: "ns",
			Name: uid, UID: types.UID(uid), Replicas: 10, MaxUnavailable: maxUnavailable}, Unavailable: unavailable}
	}
	cand := func(name string) *Candidate {
		return &Candidate{StateNode: pureStateNode(name, "default", stateNodeOpts{}), NodePool: poolWithBudgets("default")}
	}
	tests := map[string]struct {
		budgets []*scheduling.RolloutBudget
		takes   map[string]map[types.UID]int
		want    []string
		wantOut map[string]string
	}{
		"no controller counted": {want: []string{"a", "b", "c"}},
		"a budget of one takes one node's pod": {
			budgets: []*scheduling.RolloutBudget{budget("web", 1, 0)},
			takes:   map[string]map[types.UID]int{"a": {"web": 1}, "b": {"web": 1}},
			want:    []string{"a", "c"},
			wantOut: map[string]string{"b": "Deployment ns/web has 0 of 10 replicas unavailable (maxUnavailable 1)"},
		},
		"a budget of two takes two": {
			budgets: []*scheduling.RolloutBudget{budget("web", 2, 0)},
			takes:   map[string]map[types.UID]int{"a": {"web": 1}, "b": {"web": 1}, "c": {"web": 1}},
			want:    []string{"a", "b"},
			wantOut: map[string]string{"c": "Deployment ns/web has 0 of 10 replicas unavailable (maxUnavailable 2)"},
		},
		"unavailable replicas use the room up": {
			budgets: []*scheduling.RolloutBudget{budget("web", 3, 2)},
			takes:   map[string]map[types.UID]int{"a": {"web": 1}, "b": {"web": 1}},
			want:    []string{"a", "c"},
			wantOut: map[string]string{"b": "Deployment ns/web has 2 of 10 replicas unavailable (maxUnavailable 3)"},
		},
		"a node holding more than the room is left to single-node consolidation": {
			budgets: []*scheduling.RolloutBudget{budget("web", 1, 0), budget("api", 1, 0)},
			takes:   map[string]map[types.UID]int{"a": {"web": 3}, "b": {"api": 1}, "c": {"web": 1}},
			want:    []string{"b", "c"},
			wantOut: map[string]string{"a": "Deployment ns/web has 0 of 10 replicas unavailable (maxUnavailable 1)"},
		},
		"budgets of different controllers are separate": {
			budgets: []*scheduling.RolloutBudget{budget("web", 1, 0), budget("api", 1, 0)},
			takes:   map[string]map[types.UID]int{"a": {"web": 1}, "b": {"api": 1}},
			want:    []string{"a", "b", "c"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := &world{}
			for node, takes := range tc.takes {
				for uid, n := range takes {
					for _, b := range tc.budgets {
						if b.UID == uid {
							for range n {
								w.takeFromRollout(node, b)
							}
						}
					}
				}
			}
			kept, out := w.withinRolloutBudgets([]*Candidate{cand("a"), cand("b"), cand("c")})
			var got []string
			for _, c := range kept {
				got = append(got, c.Name())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("kept (-want,+got):\n%s", diff)
			}
			if len(tc.wantOut) == 0 {
				tc.wantOut = nil
			}
			if len(out) == 0 {
				out = nil
			}
			if diff := cmp.Diff(tc.wantOut, out); diff != "" {
				t.Errorf("left out (-want,+got):\n%s", diff)
			}
		})
	}
}
