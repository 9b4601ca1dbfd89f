package simulation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karp-autoscaler/karp/pkg/test"
)

// defaultSpreadFor gives every pod of ps the constraints, as the
// provisioner does for pods whose selector it deduced.
func defaultSpreadFor(ps []*corev1.Pod, tscs ...corev1.TopologySpreadConstraint) map[types.UID][]corev1.TopologySpreadConstraint {
	out := map[types.UID][]corev1.TopologySpreadConstraint{}
	for _, p := range ps {
		out[p.UID] = tscs
	}
	return out
}

func zoneDefault(when corev1.UnsatisfiableConstraintAction) corev1.TopologySpreadConstraint {
	return corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: when,
		LabelSelector: &metav1.LabelSelector{MatchLabels: web}}
}

// TestSolveDefaultSpread: the scheduler's default constraints, handed in
// per pod, spread pods that declare none; pods with their own constraints
// keep only theirs; the pods themselves are never changed.
func TestSolveDefaultSpread(t *testing.T) {
	plain := webPods(3, func(w *test.PodWrapper) *test.PodWrapper { return w })
	plainSix := pods("six", 6, func(w *test.PodWrapper) *test.PodWrapper { return w.Labels(web).Requests("cpu", "100m") })
	ownHostname := webPods(3, func(w *test.PodWrapper) *test.PodWrapper {
		return w.Spread(corev1.LabelHostname, 1, corev1.DoNotSchedule, web)
	})
	cases := map[string]solveCase{
		"without defaults the pods share one node": {
			pods: plain, claims: n(1),
		},
		"a DoNotSchedule zone default spreads the pods over the zones": {
			pods: plain, claims: n(3), check: wantZones(map[string]int{zoneA: 1, zoneB: 1, zoneC: 1}),
		},
		"six pods, two per zone": {
			pods: plainSix, check: wantZones(map[string]int{zoneA: 2, zoneB: 2, zoneC: 2}),
		},
		"the default counts the pods already running": {
			nodes: []*Node{zoneNode("n", zoneA, test.MakePod("old-1").Labels(web).Obj(), test.MakePod("old-2").Labels(web).Obj())},
			pods:  plain[:2], check: wantZones(map[string]int{zoneA: 0, zoneB: 1, zoneC: 1}),
		},
		"a pod's own constraints replace the defaults": {
			pods: ownHostname, claims: n(3), apart: [][]string{names("web", 3)},
		},
		"a ScheduleAnyway default is respected when possible": {
			pods: plain, claims: n(3), check: wantZones(map[string]int{zoneA: 1, zoneB: 1, zoneC: 1}),
		},
		"a ScheduleAnyway default is relaxed when it cannot hold": {
			pools: []*NodePool{withTypes(test.MakeNodePool("default").Limits(test.ResourceList("nodes", "1")).Obj())},
			pods:  plain, claims: n(1), together: [][]string{names("web", 3)},
		},
		"a ScheduleAnyway default is dropped under the Ignore policy": {
			opts: Options{PreferencePolicy: PreferencePolicyIgnore},
			pods: plain, claims: n(1),
		},
	}
	withDefaults := map[string]map[types.UID][]corev1.TopologySpreadConstraint{
		"a DoNotSchedule zone default spreads the pods over the zones": defaultSpreadFor(plain, zoneDefault(corev1.DoNotSchedule)),
		"six pods, two per zone":                                      defaultSpreadFor(plainSix, zoneDefault(corev1.DoNotSchedule)),
		"the default counts the pods already running":                 defaultSpreadFor(plain, zoneDefault(corev1.DoNotSchedule)),
		"a pod's own constraints replace the defaults":                defaultSpreadFor(ownHostname, zoneDefault(corev1.DoNotSchedule)),
		"a ScheduleAnyway default is respected when possible":         defaultSpreadFor(plain, zoneDefault(corev1.ScheduleAnyway)),
		"a ScheduleAnyway default is relaxed when it cannot hold":     defaultSpreadFor(plain, zoneDefault(corev1.ScheduleAnyway)),
		"a ScheduleAnyway default is dropped under the Ignore policy": defaultSpreadFor(plain, zoneDefault(corev1.ScheduleAnyway)),
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := tc.input()
			in.DefaultSpread = withDefaults[name]
			own := map[string]int{}
			for _, p := range in.Pods {
				own[p.Name] = len(p.Spec.TopologySpreadConstraints)
			}
			res := Solve(t.Context(), in)
			checkInvariants(t, in, res)
			tc.assert(t, res)
			for _, p := range in.Pods {
				if got := len(p.Spec.TopologySpreadConstraints); got != own[p.Name] {
					t.Errorf("pod %s has %d spread constraints after the solve, want its own %d: defaults apply to the solve only", p.Name, got, own[p.Name])
				}
			}
		})
	}
}

// TestSolveDefaultSpreadOwnConstraintWins: a pod's own zone constraint
// with a larger skew wins over a stricter default (no merge).
func TestSolveDefaultSpreadOwnConstraintWins(t *testing.T) {
	own := webPods(3, func(w *test.PodWrapper) *test.PodWrapper {
		return w.Spread(corev1.LabelTopologyZone, 3, corev1.DoNotSchedule, web)
	})
	tc := solveCase{pods: own, claims: n(1)}
	in := tc.input()
	in.DefaultSpread = defaultSpreadFor(own, zoneDefault(corev1.DoNotSchedule))
	res := Solve(t.Context(), in)
	checkInvariants(t, in, res)
	tc.assert(t, res)
}

// TestSolveDefaultSpreadSaysWhereItComesFrom: a pod the default spread
// keeps pending is told the constraint is the scheduler's default, since
// its spec shows none.
func TestSolveDefaultSpreadSaysWhereItComesFrom(t *testing.T) {
	minDomains := int32(3)
	plain := webPods(3, func(w *test.PodWrapper) *test.PodWrapper { return w })
	def := zoneDefault(corev1.DoNotSchedule)
	def.MinDomains = &minDomains
	tc := solveCase{
		pools:   []*NodePool{withTypes(test.MakeNodePool("default").Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zoneA, zoneB).Obj())},
		pods:    plain,
		reasons: map[string]string{"web-2": "NodePool default: default topology spread (scheduler config) on topology.kubernetes.io/zone (maxSkew 1) would be exceeded [Topology]"},
	}
	in := tc.input()
	in.DefaultSpread = defaultSpreadFor(plain, def)
	res := Solve(t.Context(), in)
	checkInvariants(t, in, res)
	tc.assert(t, res)
}
