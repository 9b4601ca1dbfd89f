package simulation

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func TestPendingByZone(t *testing.T) {
	zoneIn := func(zones ...string) scheduling.Requirements {
		return scheduling.NewRequirements(scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zones...))
	}
	zoneSpread := func(w *test.PodWrapper) *test.PodWrapper {
		return w.Spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, web)
	}
	bound := func(name string) *corev1.Pod {
		return test.MakePod(name).Labels(web).Requests("cpu", "100m").Obj()
	}
	cases := map[string]struct {
		in   Input
		want map[string]int
	}{
		"no zone signal is flexible": {
			in:   Input{Pods: webPods(3, func(w *test.PodWrapper) *test.PodWrapper { return w })},
			want: map[string]int{ZoneFlexible: 3},
		},
		"a node selector on one zone is that zone": {
			in: Input{Pods: webPods(2, func(w *test.PodWrapper) *test.PodWrapper {
				return w.NodeSelector(map[string]string{corev1.LabelTopologyZone: zoneA})
			})},
			want: map[string]int{zoneA: 2},
		},
		"required affinity on two zones is flexible": {
			in: Input{Pods: webPods(1, func(w *test.PodWrapper) *test.PodWrapper {
				return w.NodeAffinityTerm(req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zoneA, zoneB))
			})},
			want: map[string]int{ZoneFlexible: 1},
		},
		"a selector and a volume in different zones leave none": {
			in: Input{
				Pods: webPods(1, func(w *test.PodWrapper) *test.PodWrapper {
					return w.NodeSelector(map[string]string{corev1.LabelTopologyZone: zoneA})
				}),
				VolumeRequirements: map[types.UID][]scheduling.Requirements{"uid-web-0": {zoneIn(zoneB)}},
			},
			want: map[string]int{ZoneNone: 1},
		},
		"a volume's zone narrows a flexible pod": {
			in: Input{
				Pods:               webPods(2, func(w *test.PodWrapper) *test.PodWrapper { return w }),
				VolumeRequirements: map[types.UID][]scheduling.Requirements{"uid-web-1": {zoneIn(zoneC)}},
			},
			want: map[string]int{ZoneFlexible: 1, zoneC: 1},
		},
		"volume alternatives in two zones are flexible": {
			in: Input{
				Pods:               webPods(1, func(w *test.PodWrapper) *test.PodWrapper { return w }),
				VolumeRequirements: map[types.UID][]scheduling.Requirements{"uid-web-0": {zoneIn(zoneA), zoneIn(zoneB)}},
			},
			want: map[string]int{ZoneFlexible: 1},
		},
		"zone spread leaves the one zone behind the others": {
			in: Input{
				Pods:  webPods(2, zoneSpread),
				Nodes: []*Node{zoneNode("a", zoneA, bound("a-0")), zoneNode("b", zoneB, bound("b-0"))},
			},
			want: map[string]int{zoneC: 2},
		},
		"zone spread with every zone level is flexible": {
			in:   Input{Pods: webPods(2, zoneSpread)},
			want: map[string]int{ZoneFlexible: 2},
		},
		"zone spread and affinity intersect": {
			in: Input{
				Pods: webPods(1, func(w *test.PodWrapper) *test.PodWrapper {
					return zoneSpread(w).NodeAffinityTerm(req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zoneA, zoneB))
				}),
				Nodes: []*Node{zoneNode("a", zoneA, bound("a-0"), bound("a-1")), zoneNode("b", zoneB, bound("b-0"))},
			},
			want: map[string]int{zoneB: 1},
		},
		"headroom and pods of deleting nodes are not pending": {
			in: func() Input {
				n := zoneNode("gone", zoneA, bound("gone-0"))
				n.MarkedForDeletion = true
				ps := webPods(2, func(w *test.PodWrapper) *test.PodWrapper { return w })
				return Input{Pods: ps, Nodes: []*Node{n}, Headroom: map[types.UID]bool{ps[0].UID: true}}
			}(),
			want: map[string]int{ZoneFlexible: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := tc.in
			in.NodePools = []*NodePool{withTypes(test.MakeNodePool("default").Obj())}
			got := Solve(t.Context(), in).PendingByZone
			if !maps.Equal(got, tc.want) {
				t.Errorf("PendingByZone = %v, want %v", got, tc.want)
			}
		})
	}
}
