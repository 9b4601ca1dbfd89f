package simulation

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestSolveShrinksNodeClaimsWhosePodsPartlyFitElsewhere: with a 1.5-cpu
// DaemonSet on every node, 31 half-cpu pods fill a 16-cpu node (29 of
// them) and need a 4-cpu node for the last two, on a price list where
// size and price are proportional. Placement and merging alone leave the
// last pods on an 8-cpu node; moving all but two of them into the big
// node's room shrinks it to 4 cpu. Pods with topology ties move only
// while every constraint still holds (move.go).
func TestSolveShrinksNodeClaimsWhosePodsPartlyFitElsewhere(t *testing.T) {
	agent := test.MakeDaemonSet("agent").Requests("cpu", "1500m").Obj()
	half := func(w *test.PodWrapper) *test.PodWrapper { return w.Requests("cpu", "500m") }
	runCases(t, map[string]solveCase{
		"pods move into the big node's room and the small node shrinks": {
			pools: linearPool(), daemonSets: []*appsDaemonSet{agent}, pods: pods("p", 31, half), claims: n(2),
			check: wantTypes("lin-16", "lin-4"),
		},
		"pods with hostname spread move while the skew allows": {
			pools: linearPool(), daemonSets: []*appsDaemonSet{agent}, claims: n(2),
			pods: pods("p", 31, func(w *test.PodWrapper) *test.PodWrapper {
				return half(w).Labels(web).Spread(corev1.LabelHostname, 100, corev1.DoNotSchedule, web)
			}),
			check: wantTypes("lin-16", "lin-4"),
		},
		"pods the move would put past their hostname maxSkew stay": {
			pools: linearPool(), daemonSets: []*appsDaemonSet{agent}, claims: n(2),
			pods: pods("p", 31, func(w *test.PodWrapper) *test.PodWrapper {
				return half(w).Labels(web).Spread(corev1.LabelHostname, 20, corev1.DoNotSchedule, web)
			}),
			check: wantTypes("lin-16", "lin-8"),
		},
	})
}

// wantTypes checks the cheapest instance types of the NodeClaims, in any
// order.
func wantTypes(want ...string) func(*testing.T, *Result) {
	return func(t *testing.T, res *Result) {
		t.Helper()
		var types []string
		for _, nc := range res.NodeClaims {
			types = append(types, nc.InstanceTypes[0].Name)
		}
		slices.Sort(types)
		slices.Sort(want)
		if !slices.Equal(types, want) {
			t.Errorf("NodeClaims on %v for $%.4f/hour, want %v", types, res.Cost(), want)
		}
	}
}
