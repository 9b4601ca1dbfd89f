package simulation

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
)

var web = map[string]string{"app": "web"}

// zoneCounts counts placed pods per zone of their NodeClaim or node.
func zoneCounts(res *Result) map[string]int {
	out := map[string]int{}
	for _, pl := range res.Order {
		if pl.NodeClaim >= 0 {
			out[res.NodeClaims[pl.NodeClaim].Offering.Zone]++
		} else {
			out[pl.Node.Labels[corev1.LabelTopologyZone]]++
		}
	}
	return out
}

func wantZones(want map[string]int) func(t *testing.T, res *Result) {
	return func(t *testing.T, res *Result) {
		t.Helper()
		got := zoneCounts(res)
		for z, c := range want {
			if got[z] != c {
				t.Errorf("zone counts %v, want %v", got, want)
				return
			}
		}
	}
}

func webPods(count int, build func(*test.PodWrapper) *test.PodWrapper) []*corev1.Pod {
	return pods("web", count, func(w *test.PodWrapper) *test.PodWrapper {
		return build(w.Labels(map[string]string{"app": "web"}).Requests("cpu", "100m"))
	})
}

func zoneNode(name, zone string, bound ...*corev1.Pod) *Node {
	return existingNode(test.MakeNode(name).Label(corev1.LabelTopologyZone, zone).Label(corev1.LabelArchStable, "amd64").
		Allocatable("cpu", "1", "memory", "1Gi", "pods", "2").Obj(), bound...)
}

func TestSolveTopologySpread(t *testing.T) {
	zoneSpread := func(w *test.PodWrapper) *test.PodWrapper {
		return w.Spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, web)
	}
	twoZones := []*NodePool{withTypes(test.MakeNodePool("default").Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zoneA, zoneB).Obj())}
	minDomains := int32(3)
	runCases(t, map[string]solveCase{
		"zone spread over three zones": {
			pods: webPods(3, zoneSpread), claims: n(3), check: wantZones(map[string]int{zoneA: 1, zoneB: 1, zoneC: 1}),
		},
		"zone spread of six pods": {
			pods: webPods(6, zoneSpread), check: wantZones(map[string]int{zoneA: 2, zoneB: 2, zoneC: 2}),
		},
		"hostname spread": {
			pods: webPods(3, func(w *test.PodWrapper) *test.PodWrapper {
				return w.Spread(corev1.LabelHostname, 1, corev1.DoNotSchedule, web)
			}),
			claims: n(3), apart: [][]string{names("web", 3)},
		},
		"hostname spread with maxSkew 2": {
			pods: webPods(4, func(w *test.PodWrapper) *test.PodWrapper {
				return w.Spread(corev1.LabelHostname, 2, corev1.DoNotSchedule, web)
			}),
			claims: n(2),
		},
		"zone spread within the zones the pod allows": {
			pods: webPods(4, func(w *test.PodWrapper) *test.PodWrapper {
				return zoneSpread(w).NodeAffinityTerm(req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zoneA, zoneB))
			}),
			check: wantZones(map[string]int{zoneA: 2, zoneB: 2}),
		},
		"zone spread counts existing pods": {
			nodes: []*Node{zoneNode("n", zoneA, test.MakePod("old-1").Labels(web).Obj(), test.MakePod("old-2").Labels(web).Obj())},
			pods:  webPods(2, zoneSpread), check: wantZones(map[string]int{zoneA: 0, zoneB: 1, zoneC: 1}),
		},
		"minDomains above the reachable zones": {
			pools: twoZones,
			pods: webPods(3, func(w *test.PodWrapper) *test.PodWrapper {
				return w.SpreadConstraint(corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
					WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: web}, MinDomains: &minDomains})
			}),
			reasons: map[string]string{"web-2": "NodePool default: topology spread on topology.kubernetes.io/zone (maxSkew 1) would be exceeded [Topology]"},
		},
		"without minDomains two zones take three pods": {
			pools: twoZones, pods: webPods(3, zoneSpread), check: wantZones(map[string]int{zoneA: 2, zoneB: 1}),
		},
		"ScheduleAnyway spread is respected when possible": {
			pods: webPods(3, func(w *test.PodWrapper) *test.PodWrapper {
				return w.Spread(corev1.LabelTopologyZone, 1, corev1.ScheduleAnyway, web)
			}),
			check: wantZones(map[string]int{zoneA: 1, zoneB: 1, zoneC: 1}),
		},
		"ScheduleAnyway spread is relaxed when impossible": {
			pools: []*NodePool{withTypes(test.MakeNodePool("default").Limits(test.ResourceList("nodes", "1")).Obj())},
			pods: webPods(2, func(w *test.PodWrapper) *test.PodWrapper {
				return w.Spread(corev1.LabelHostname, 1, corev1.ScheduleAnyway, web)
			}),
			claims: n(1), together: [][]string{names("web", 2)},
		},
		"ScheduleAnyway spread ignored by policy": {
			opts: Options{PreferencePolicy: PreferencePolicyIgnore},
			pods: webPods(3, func(w *test.PodWrapper) *test.PodWrapper {
				return w.Spread(corev1.LabelHostname, 1, corev1.ScheduleAnyway, web)
			}),
			claims: n(1),
		},
		"spread on a custom key the NodePool defines": {
			pools: []*NodePool{withTypes(test.MakeNodePool("default").Requirement("rack", corev1.NodeSelectorOpIn, "r1", "r2").Obj())},
			pods: webPods(2, func(w *test.PodWrapper) *test.PodWrapper {
				return w.Spread("rack", 1, corev1.DoNotSchedule, web)
			}),
			claims: n(2),
			check: func(t *testing.T, res *Result) {
				got := map[string]bool{}
				for _, nc := range res.NodeClaims {
					got[nc.Requirements.Get("rack").String()] = true
				}
				if !got["rack In [r1]"] || !got["rack In [r2]"] {
					t.Fatalf("racks %v", got)
				}
			},
		},
		"matchLabelKeys counts each revision apart": {
			pods: list(pods("v1", 2, func(w *test.PodWrapper) *test.PodWrapper {
				return w.Labels(map[string]string{"app": "web", "rev": "1"}).Requests("cpu", "100m").SpreadConstraint(revSpread())
			}), pods("v2", 2, func(w *test.PodWrapper) *test.PodWrapper {
				return w.Labels(map[string]string{"app": "web", "rev": "2"}).Requests("cpu", "100m").SpreadConstraint(revSpread())
			})),
			claims: n(2), apart: [][]string{{"v1-0", "v1-1"}, {"v2-0", "v2-1"}},
		},
		"a spread that does not select the pod itself": {
			nodes: []*Node{zoneNode("n", zoneA, test.MakePod("y-1").Label("app", "y").Obj(), test.MakePod("y-2").Label("app", "y").Obj())},
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.Label("app", "x").Spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, map[string]string{"app": "y"})
			}),
			check: func(t *testing.T, res *Result) {
				if z := claimOf(res, "p").Offering.Zone; z == zoneA {
					t.Fatalf("placed in %s, which already has 2 selected pods", z)
				}
			},
		},
		"zone spread with hostname anti-affinity": {
			pods: webPods(3, func(w *test.PodWrapper) *test.PodWrapper {
				return zoneSpread(w).PodAntiAffinity(corev1.LabelHostname, web)
			}),
			claims: n(3), check: wantZones(map[string]int{zoneA: 1, zoneB: 1, zoneC: 1}),
		},
		"zone spread on arm64 nodes": {
			pods: webPods(3, func(w *test.PodWrapper) *test.PodWrapper {
				return zoneSpread(w).NodeSelector(map[string]string{corev1.LabelArchStable: "arm64"}).Requests("cpu", "3")
			}),
			claims: n(3), onType: map[string]string{"web-0": "arm-medium", "web-1": "arm-medium", "web-2": "arm-medium"},
			check: wantZones(map[string]int{zoneA: 1, zoneB: 1, zoneC: 1}),
		},
	})
}

func revSpread() corev1.TopologySpreadConstraint {
	return corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: web}, MatchLabelKeys: []string{"rev"}}
}

func TestSolvePodAffinity(t *testing.T) {
	db := map[string]string{"app": "db"}
	dbPod := func(zone string) *corev1.Pod {
		return test.MakePod("db").Labels(db).Requests("cpu", "100m").NodeSelector(map[string]string{corev1.LabelTopologyZone: zone}).Obj()
	}
	fullNode := zoneNode("n", zoneB, test.MakePod("db-old").Labels(db).Requests("cpu", "1").Obj())
	runCases(t, map[string]solveCase{
		"zone affinity follows the selected pod": {
			pods:   []*corev1.Pod{dbPod(zoneC), test.MakePod("app").Requests("cpu", "100m").PodAffinity(corev1.LabelTopologyZone, db).Obj()},
			inZone: map[string]string{"app": zoneC},
		},
		"hostname affinity shares the node": {
			pods:     []*corev1.Pod{dbPod(zoneC), test.MakePod("app").Requests("cpu", "100m").PodAffinity(corev1.LabelHostname, db).Obj()},
			together: [][]string{{"db", "app"}}, claims: n(1),
		},
		"affinity to a pod that does not exist": {
			pods:    []*corev1.Pod{test.MakePod("app").Requests("cpu", "100m").PodAffinity(corev1.LabelTopologyZone, db).Obj()},
			reasons: map[string]string{"app": "NodePool default: pod affinity on topology.kubernetes.io/zone not satisfied [Topology]"},
		},
		"self affinity keeps a group in one zone": {
			pods: webPods(3, func(w *test.PodWrapper) *test.PodWrapper {
				return w.PodAffinity(corev1.LabelTopologyZone, web).Requests("cpu", "1500m")
			}),
			check: func(t *testing.T, res *Result) {
				if len(zoneCounts(res)) != 1 {
					t.Fatalf("zones %v, want one", zoneCounts(res))
				}
			},
		},
		"affinity to a pod listed later": {
			pods: []*corev1.Pod{test.MakePod("app").Requests("cpu", "1").PodAffinity(corev1.LabelHostname, db).Obj(),
				test.MakePod("db").Labels(db).Requests("cpu", "100m").Obj()},
			together: [][]string{{"db", "app"}},
		},
		"affinity to a pod on a full existing node": {
			nodes:  []*Node{fullNode},
			pods:   []*corev1.Pod{test.MakePod("app").Requests("cpu", "100m").PodAffinity(corev1.LabelTopologyZone, db).Obj()},
			inZone: map[string]string{"app": zoneB},
		},
		"affinity in another namespace": {
			pods: []*corev1.Pod{test.MakePod("db").Namespace("data").Labels(db).Requests("cpu", "100m").Obj(),
				test.MakePod("app").Requests("cpu", "100m").PodAffinityTerm(corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname,
					LabelSelector: &metav1.LabelSelector{MatchLabels: db}, Namespaces: []string{"data"}}).Obj()},
			together: [][]string{{"db", "app"}},
		},
		"affinity ignores pods of other namespaces by default": {
			pods: []*corev1.Pod{test.MakePod("db").Namespace("data").Labels(db).Requests("cpu", "100m").Obj(),
				test.MakePod("app").Requests("cpu", "100m").PodAffinity(corev1.LabelHostname, db).Obj()},
			reasons: map[string]string{"app": "NodePool default: pod affinity on kubernetes.io/hostname not satisfied [Topology]"},
		},
		"an empty namespaceSelector selects every namespace": {
			pods: []*corev1.Pod{test.MakePod("db").Namespace("data").Labels(db).Requests("cpu", "100m").Obj(),
				test.MakePod("app").Requests("cpu", "100m").PodAffinityTerm(corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname,
					LabelSelector: &metav1.LabelSelector{MatchLabels: db}, NamespaceSelector: &metav1.LabelSelector{}}).Obj()},
			together: [][]string{{"db", "app"}},
		},
		"a namespaceSelector matching namespace labels": {
			namespaces: []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"tier": "data"}}}},
			pods: []*corev1.Pod{test.MakePod("db").Namespace("data").Labels(db).Requests("cpu", "100m").Obj(),
				test.MakePod("app").Requests("cpu", "100m").PodAffinityTerm(corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname,
					LabelSelector: &metav1.LabelSelector{MatchLabels: db}, NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "data"}}}).Obj()},
			together: [][]string{{"db", "app"}},
		},
		"preferred affinity is honoured": {
			pods:   []*corev1.Pod{dbPod(zoneC), test.MakePod("app").Requests("cpu", "100m").PreferredPodAffinity(10, corev1.LabelTopologyZone, db).Obj()},
			inZone: map[string]string{"app": zoneC},
		},
		"preferred affinity to nothing is relaxed": {
			pods:   []*corev1.Pod{test.MakePod("app").Requests("cpu", "100m").PreferredPodAffinity(10, corev1.LabelTopologyZone, db).Obj()},
			claims: n(1),
		},
	})
}

func TestSolvePodAntiAffinity(t *testing.T) {
	guard := test.MakePod("guard").PodAntiAffinity(corev1.LabelHostname, web).Obj()
	runCases(t, map[string]solveCase{
		"hostname anti-affinity": {
			pods:   webPods(3, func(w *test.PodWrapper) *test.PodWrapper { return w.PodAntiAffinity(corev1.LabelHostname, web) }),
			claims: n(3), apart: [][]string{names("web", 3)},
		},
		"zone anti-affinity runs out of zones": {
			pods:    webPods(4, func(w *test.PodWrapper) *test.PodWrapper { return w.PodAntiAffinity(corev1.LabelTopologyZone, web) }),
			claims:  n(3),
			reasons: map[string]string{"web-3": "NodePool default: pod anti-affinity on topology.kubernetes.io/zone not satisfied [Topology]"},
		},
		"an existing pod's anti-affinity keeps new pods off its node": {
			nodes:  []*Node{zoneNode("n", zoneA, guard)},
			pods:   webPods(1, func(w *test.PodWrapper) *test.PodWrapper { return w }),
			claims: n(1),
		},
		"an existing pod's zone anti-affinity keeps new pods out of its zone": {
			nodes: []*Node{zoneNode("n", zoneA, test.MakePod("guard").PodAntiAffinity(corev1.LabelTopologyZone, web).Obj())},
			pods: webPods(3, func(w *test.PodWrapper) *test.PodWrapper {
				return w.Spread(corev1.LabelTopologyZone, 3, corev1.DoNotSchedule, web)
			}),
			check: wantZones(map[string]int{zoneA: 0}),
		},
		"a pending pod's anti-affinity keeps others off its NodeClaim": {
			pods: []*corev1.Pod{test.MakePod("guard").Requests("cpu", "1").PodAntiAffinity(corev1.LabelHostname, web).Obj(),
				test.MakePod("web").Labels(web).Requests("cpu", "100m").Obj()},
			apart: [][]string{{"guard", "web"}},
		},
		"anti-affinity to other pods only": {
			pods: []*corev1.Pod{test.MakePod("a").Labels(map[string]string{"app": "a"}).Requests("cpu", "100m").PodAntiAffinity(corev1.LabelHostname, web).Obj(),
				test.MakePod("b").Labels(map[string]string{"app": "b"}).Requests("cpu", "100m").Obj()},
			together: [][]string{{"a", "b"}},
		},
		"preferred anti-affinity is honoured": {
			pods: webPods(2, func(w *test.PodWrapper) *test.PodWrapper {
				return w.PreferredPodAntiAffinity(10, corev1.LabelHostname, web)
			}),
			apart: [][]string{names("web", 2)},
		},
		"preferred anti-affinity is relaxed by the node limit": {
			pools: []*NodePool{withTypes(test.MakeNodePool("default").Limits(test.ResourceList("nodes", "1")).Obj())},
			pods: webPods(2, func(w *test.PodWrapper) *test.PodWrapper {
				return w.PreferredPodAntiAffinity(10, corev1.LabelHostname, web)
			}),
			together: [][]string{names("web", 2)},
		},
		"anti-affinity between namespaces only when listed": {
			pods: []*corev1.Pod{test.MakePod("a").Namespace("one").Labels(web).Requests("cpu", "100m").PodAntiAffinity(corev1.LabelHostname, web).Obj(),
				test.MakePod("b").Namespace("two").Labels(web).Requests("cpu", "100m").PodAntiAffinity(corev1.LabelHostname, web).Obj()},
			together: [][]string{{"a", "b"}},
		},
	})
}

func TestSolveHostPorts(t *testing.T) {
	udp := test.MakePod("udp").Requests("cpu", "100m").Obj()
	udp.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 53, HostPort: 53, Protocol: corev1.ProtocolUDP}}
	runCases(t, map[string]solveCase{
		"the same host port twice": {
			pods:  pods("p", 2, func(w *test.PodWrapper) *test.PodWrapper { return w.Requests("cpu", "100m").HostPort(53) }),
			apart: [][]string{names("p", 2)}, claims: n(2),
		},
		"different host ports": {
			pods:     []*corev1.Pod{test.MakePod("a").Requests("cpu", "100m").HostPort(80).Obj(), test.MakePod("b").Requests("cpu", "100m").HostPort(443).Obj()},
			together: [][]string{{"a", "b"}},
		},
		"the same port over another protocol": {
			pods:     []*corev1.Pod{udp, test.MakePod("tcp").Requests("cpu", "100m").HostPort(53).Obj()},
			together: [][]string{{"udp", "tcp"}},
		},
	})
}

func TestSolveLimits(t *testing.T) {
	limited := func(pairs ...string) []*NodePool {
		return []*NodePool{withTypes(test.MakeNodePool("default").Limits(test.ResourceList(pairs...)).Obj())}
	}
	poolNode := existingNode(test.MakeNode("n").Label("karpenter.sh/nodepool", "default").Taint(gpuTaint).
		Allocatable("cpu", "4", "memory", "8Gi", "pods", "20").Obj())
	runCases(t, map[string]solveCase{
		"a cpu limit stops the second node": {
			pools:   limited("cpu", "2"),
			pods:    pods("p", 2, func(w *test.PodWrapper) *test.PodWrapper { return w.Requests("cpu", "1500m") }),
			reasons: map[string]string{"p-1": "NodePool default: limit cpu=2 reached (2 in use) [NodePoolLimit]"},
		},
		"a node limit": {
			pools:   limited("nodes", "1"),
			pods:    webPods(2, func(w *test.PodWrapper) *test.PodWrapper { return w.PodAntiAffinity(corev1.LabelHostname, web) }),
			reasons: map[string]string{"web-1": "NodePool default: limit nodes=1 reached (1 in use) [NodePoolLimit]"},
		},
		"limits count existing nodes": {
			pools: limited("cpu", "5"), nodes: []*Node{poolNode},
			pods:    onePod(func(w *test.PodWrapper) *test.PodWrapper { return w }),
			reasons: map[string]string{"p": "NodePool default: limit cpu=5 reached (4 in use) [NodePoolLimit]"},
		},
		"a limited NodePool falls back to the next": {
			pools: []*NodePool{withTypes(test.MakeNodePool("limited").Weight(10).Limits(test.ResourceList("cpu", "1")).Obj()),
				withTypes(test.MakeNodePool("open").Weight(1).Obj())},
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper { return w }), inPool: map[string]string{"p": "open"},
		},
		"limits keep bigger types off the list": {
			pools: limited("cpu", "4"),
			pods:  onePod(func(w *test.PodWrapper) *test.PodWrapper { return w }),
			check: func(t *testing.T, res *Result) {
				for _, it := range res.NodeClaims[0].InstanceTypes {
					if c := it.Capacity[corev1.ResourceCPU]; c.Value() > 4 {
						t.Fatalf("type %s exceeds the limit", it.Name)
					}
				}
			},
		},
		"a memory limit": {
			pools:   limited("memory", "4Gi"),
			pods:    onePod(func(w *test.PodWrapper) *test.PodWrapper { return w.Requests("memory", "5Gi") }),
			reasons: map[string]string{"p": "NodePool default: limit memory=4Gi reached (0 in use) [NodePoolLimit]"},
		},
		"a limit of zero nodes": {
			pools:   limited("nodes", "0"),
			pods:    onePod(func(w *test.PodWrapper) *test.PodWrapper { return w }),
			reasons: map[string]string{"p": "NodePool default: limit nodes=0 reached (0 in use) [NodePoolLimit]"},
		},
	})
}

func TestSolveIsDeterministic(t *testing.T) {
	in := benchInput(t, "1000")
	a, b := Solve(t.Context(), in), Solve(t.Context(), in)
	if len(a.NodeClaims) != len(b.NodeClaims) || len(a.Order) != len(b.Order) {
		t.Fatalf("different shapes: %d/%d NodeClaims", len(a.NodeClaims), len(b.NodeClaims))
	}
	for i := range a.Order {
		if a.Order[i].Pod != b.Order[i].Pod || a.Order[i].NodeClaim != b.Order[i].NodeClaim {
			t.Fatalf("placement %d differs", i)
		}
	}
	for i := range a.NodeClaims {
		if a.NodeClaims[i].Requirements.String() != b.NodeClaims[i].Requirements.String() {
			t.Fatalf("NodeClaim %d requirements differ", i)
		}
	}
	checkInvariants(t, in, a)
}

func TestSolveCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res := Solve(ctx, Input{Pods: onePod(func(w *test.PodWrapper) *test.PodWrapper { return w }),
		NodePools: []*NodePool{withTypes(test.MakeNodePool("default").Obj())}})
	if len(res.PodErrors) != 1 || res.PodErrors[0].Status.Message() != "simulation cancelled: context canceled [SolveError]" {
		t.Fatalf("errors %+v", res.PodErrors)
	}
}

// TestSolveStatusCodes separates pods that may fit once the cluster changes
// (limits, topology) from pods no NodePool can ever hold as configured.
func TestSolveStatusCodes(t *testing.T) {
	tests := map[string]struct {
		tc   solveCase
		want scheduling.Code
	}{
		"an untolerated taint is unresolvable": {
			tc:   solveCase{pools: []*NodePool{taintedPool("gpu", gpuTaint)}, pods: onePod(func(w *test.PodWrapper) *test.PodWrapper { return w })},
			want: scheduling.UnschedulableAndUnresolvable,
		},
		"a request no type holds is unresolvable": {
			tc:   solveCase{pods: onePod(func(w *test.PodWrapper) *test.PodWrapper { return w.Requests("cpu", "100") })},
			want: scheduling.UnschedulableAndUnresolvable,
		},
		"a reached limit may clear": {
			tc: solveCase{pools: []*NodePool{withTypes(test.MakeNodePool("default").Limits(test.ResourceList("cpu", "1")).Obj())},
				pods: onePod(func(w *test.PodWrapper) *test.PodWrapper { return w })},
			want: scheduling.Unschedulable,
		},
		"a topology constraint may clear": {
			tc:   solveCase{pods: []*corev1.Pod{test.MakePod("app").PodAffinity(corev1.LabelTopologyZone, map[string]string{"app": "db"}).Obj()}},
			want: scheduling.Unschedulable,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			res := Solve(t.Context(), tt.tc.input())
			if len(res.PodErrors) != 1 || res.PodErrors[0].Status.Code != tt.want {
				t.Fatalf("errors %+v, want code %s", res.PodErrors, tt.want)
			}
		})
	}
}
