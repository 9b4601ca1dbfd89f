package simulation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestSolveCombinations mixes constraint kinds; every case also passes the
// invariant checker.
func TestSolveCombinations(t *testing.T) {
	twoZonePool := []*NodePool{withTypes(test.MakeNodePool("default").Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zoneA, zoneB).Obj())}
	fullWebNode := zoneNode("n", zoneC, test.MakePod("old-1").Labels(web).Requests("cpu", "500m").Obj(),
		test.MakePod("old-2").Labels(web).Requests("cpu", "500m").Obj())
	tolerateAll := corev1.Toleration{Operator: corev1.TolerationOpExists}
	runCases(t, map[string]solveCase{
		"taint, arch selector and an everywhere DaemonSet": {
			pools:      []*NodePool{taintedPool("gpu", gpuTaint)},
			daemonSets: []*appsDaemonSet{test.MakeDaemonSet("agent").Requests("cpu", "1").Toleration(tolerateAll).Obj()},
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.Requests("cpu", "2").Toleration(tolerateAll).NodeSelector(map[string]string{corev1.LabelArchStable: "arm64"})
			}),
			onType: map[string]string{"p": "arm-medium"}, check: wantOverhead("cpu", "1", "pods", "1"),
		},
		"zone spread with a NodePool zone subset and a full node elsewhere": {
			pools: twoZonePool, nodes: []*Node{fullWebNode},
			pods: webPods(2, func(w *test.PodWrapper) *test.PodWrapper {
				return w.Spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, web)
			}),
			check: wantZones(map[string]int{zoneA: 1, zoneB: 1}),
		},
		"hostname anti-affinity against a node limit": {
			pools:  []*NodePool{withTypes(test.MakeNodePool("default").Limits(test.ResourceList("nodes", "2")).Obj())},
			pods:   webPods(3, func(w *test.PodWrapper) *test.PodWrapper { return w.PodAntiAffinity(corev1.LabelHostname, web) }),
			claims: n(2), reasons: map[string]string{"web-2": "NodePool default: limit nodes=2 reached (2 in use) [NodePoolLimit]"},
		},
		"preferred zone with a required arch": {
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.NodeSelector(map[string]string{corev1.LabelArchStable: "arm64"}).
					PreferredNodeAffinity(10, req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zoneB))
			}),
			onType: map[string]string{"p": "arm-medium"}, inZone: map[string]string{"p": zoneB},
		},
		"a limits-only DaemonSet on a tainted NodePool with a LimitRange": {
			pools: []*NodePool{taintedPool("gpu", gpuTaint)},
			daemonSets: []*appsDaemonSet{test.MakeDaemonSet("a").Limits("cpu", "500m").Toleration(tolerateAll).Obj(),
				test.MakeDaemonSet("b").Toleration(tolerateAll).Obj()},
			limitRanges: []corev1.LimitRange{limitRange("default", nil, test.ResourceList("cpu", "500m"))},
			pods:        onePod(func(w *test.PodWrapper) *test.PodWrapper { return w.Requests("cpu", "1500m").Toleration(tolerateAll) }),
			onType:      map[string]string{"p": "arm-medium"}, check: wantOverhead("cpu", "1", "pods", "2"),
		},
		"a full limited NodePool hands over to the next by weight": {
			pools: []*NodePool{withTypes(test.MakeNodePool("first").Weight(10).Limits(test.ResourceList("cpu", "2")).Obj()),
				withTypes(test.MakeNodePool("second").Weight(5).Obj())},
			pods:   pods("p", 2, func(w *test.PodWrapper) *test.PodWrapper { return w.Requests("cpu", "1500m") }),
			inPool: map[string]string{"p-0": "first", "p-1": "second"},
		},
		"zone affinity with hostname spread": {
			pods: list([]*corev1.Pod{test.MakePod("db").Label("app", "db").Requests("cpu", "100m").
				NodeSelector(map[string]string{corev1.LabelTopologyZone: zoneB}).Obj()},
				webPods(3, func(w *test.PodWrapper) *test.PodWrapper {
					return w.PodAffinity(corev1.LabelTopologyZone, map[string]string{"app": "db"}).Spread(corev1.LabelHostname, 1, corev1.DoNotSchedule, web)
				})),
			apart: [][]string{names("web", 3)}, check: wantZones(map[string]int{zoneB: 4}),
		},
		"minValues with a cpu limit": {
			pools: []*NodePool{withTypes(test.MakeNodePool("default").RequirementWithMinValues(labelFamily, corev1.NodeSelectorOpExists, 2).
				Limits(test.ResourceList("cpu", "4")).Obj())},
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper { return w.Requests("cpu", "3") }),
			check: func(t *testing.T, res *Result) {
				families := map[string]bool{}
				for _, it := range res.NodeClaims[0].InstanceTypes {
					families[it.Requirements.Get(labelFamily).Any()] = true
				}
				if len(families) < 2 {
					t.Fatalf("families %v, want at least 2", families)
				}
			},
		},
		"an init container, a sidecar and a DaemonSet": {
			daemonSets: []*appsDaemonSet{test.MakeDaemonSet("agent").Requests("cpu", "500m").Obj()},
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.Requests("cpu", "500m").InitContainer("setup", test.ResourceList("cpu", "1"), false).
					InitContainer("proxy", test.ResourceList("cpu", "500m"), true)
			}),
			onType: map[string]string{"p": "general-small"},
		},
		"an existing guard's anti-affinity with zone spread": {
			nodes: []*Node{zoneNode("n", zoneA, test.MakePod("guard").PodAntiAffinity(corev1.LabelTopologyZone, web).Obj())},
			pods: webPods(2, func(w *test.PodWrapper) *test.PodWrapper {
				return w.Spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, web)
			}),
			check: wantZones(map[string]int{zoneA: 0, zoneB: 1, zoneC: 1}),
		},
		"Ignore drops preferred anti-affinity and soft spread together": {
			opts: Options{PreferencePolicy: PreferencePolicyIgnore},
			pods: webPods(3, func(w *test.PodWrapper) *test.PodWrapper {
				return w.PreferredPodAntiAffinity(10, corev1.LabelHostname, web).Spread(corev1.LabelHostname, 1, corev1.ScheduleAnyway, web)
			}),
			claims: n(1),
		},
		"Respect keeps them when NodeClaims are free to open": {
			pods: webPods(3, func(w *test.PodWrapper) *test.PodWrapper {
				return w.PreferredPodAntiAffinity(10, corev1.LabelHostname, web).Spread(corev1.LabelHostname, 1, corev1.ScheduleAnyway, web)
			}),
			claims: n(3),
		},
		"a deleting node's pods keep their spread": {
			nodes: []*Node{deletingNode(zoneNode("old", zoneA, webPods(2, func(w *test.PodWrapper) *test.PodWrapper {
				return w.Owner("ReplicaSet", "web", "rs").Spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, web)
			})...))},
			claims: n(2), check: wantZones(map[string]int{zoneA: 1, zoneB: 1}),
		},
	})
}

func deletingNode(n *Node) *Node {
	n.MarkedForDeletion = true
	return n
}
