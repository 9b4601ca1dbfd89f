package simulation

import (
	"fmt"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// linearTypes are priced by size ($0.05 per cpu, 4Gi per cpu), so one
// node of twice the size costs what two halves do: the price list alone
// never says "fewer nodes". Larger types are a rounding error dearer per
// cpu, as float prices come out, so placement opens small nodes.
func linearTypes() []*scheduling.InstanceType {
	var out []*scheduling.InstanceType
	for _, cpu := range []int{1, 2, 4, 8, 16} {
		out = append(out, makeType(fmt.Sprintf("lin-%d", cpu), "amd64", 0.05*float64(cpu)*(1+1e-12*float64(cpu)),
			"cpu", fmt.Sprint(cpu), "memory", fmt.Sprintf("%dGi", 4*cpu), "pods", "100"))
	}
	return out
}

func linearPool() []*NodePool {
	return []*NodePool{withTypes(test.MakeNodePool("default").Obj(), linearTypes()...)}
}

// bigPods are four 3.5-cpu pods: one per 4-cpu node on marginal cost
// alone, four to a 16-cpu node at the same price.
func bigPods(build func(*test.PodWrapper) *test.PodWrapper) []*corev1.Pod {
	return webPods(4, func(w *test.PodWrapper) *test.PodWrapper { return build(w.Requests("cpu", "3500m")) })
}

func same(w *test.PodWrapper) *test.PodWrapper { return w }

// TestSolveMergesEqualPriceNodes: NodeClaims merge into one at equal price
// only while every constraint of their pods holds on the merged node.
func TestSolveMergesEqualPriceNodes(t *testing.T) {
	all := names("web", 4)
	runCases(t, map[string]solveCase{
		"four pods share one node of four times the size": {
			pools: linearPool(), pods: bigPods(same), claims: n(1), together: [][]string{all},
			onType: map[string]string{"web-0": "lin-16"},
		},
		"hostname anti-affinity keeps them apart": {
			pools: linearPool(), claims: n(4), apart: [][]string{all},
			pods: bigPods(func(w *test.PodWrapper) *test.PodWrapper { return w.PodAntiAffinity(corev1.LabelHostname, web) }),
		},
		"preferred hostname anti-affinity honoured at placement is kept": {
			pools: linearPool(), claims: n(4), apart: [][]string{all},
			pods: bigPods(func(w *test.PodWrapper) *test.PodWrapper {
				return w.PreferredPodAntiAffinity(10, corev1.LabelHostname, web)
			}),
		},
		"hostname spread maxSkew 2 caps a node at two": {
			pools: linearPool(), claims: n(2),
			pods: bigPods(func(w *test.PodWrapper) *test.PodWrapper {
				return w.Spread(corev1.LabelHostname, 2, corev1.DoNotSchedule, web)
			}),
		},
		"a host port keeps them apart": {
			pools: linearPool(), claims: n(4), apart: [][]string{all},
			pods: bigPods(func(w *test.PodWrapper) *test.PodWrapper { return w.HostPort(8080) }),
		},
		"pods in different zones merge only within a zone": {
			pools: linearPool(), claims: n(2),
			pods: list(
				pods("a", 2, func(w *test.PodWrapper) *test.PodWrapper {
					return w.Requests("cpu", "3500m").NodeSelector(map[string]string{corev1.LabelTopologyZone: zoneA})
				}),
				pods("b", 2, func(w *test.PodWrapper) *test.PodWrapper {
					return w.Requests("cpu", "3500m").NodeSelector(map[string]string{corev1.LabelTopologyZone: zoneB})
				})),
			together: [][]string{{"a-0", "a-1"}, {"b-0", "b-1"}},
			inZone:   map[string]string{"a-0": zoneA, "b-0": zoneB},
		},
		"zone spread keeps each zone's count": {
			pools: linearPool(),
			pods: webPods(6, func(w *test.PodWrapper) *test.PodWrapper {
				return w.Requests("cpu", "3500m").Spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, web)
			}),
			check: wantZones(map[string]int{zoneA: 2, zoneB: 2, zoneC: 2}),
		},
		"a DaemonSet is paid once on the merged node": {
			pools:      linearPool(),
			daemonSets: []*appsDaemonSet{test.MakeDaemonSet("agent").Requests("cpu", "250m").Obj()},
			pods:       bigPods(same), claims: n(1), onType: map[string]string{"web-0": "lin-16"},
			check: wantOverhead("cpu", "250m", "pods", "1"),
		},
	})
}

// TestSolveEmptiesNodesIntoRoomLeftByMerges: merging the 3.5-cpu pods'
// nodes leaves 2 cpu free on each 16-cpu node; the node the four small
// pods were merged onto is emptied into that room.
func TestSolveEmptiesNodesIntoRoomLeftByMerges(t *testing.T) {
	runCases(t, map[string]solveCase{
		"small pods move into the room of merged nodes": {
			pools: linearPool(), claims: n(2),
			pods: list(pods("big", 8, func(w *test.PodWrapper) *test.PodWrapper { return w.Requests("cpu", "3500m") }),
				pods("small", 4, func(w *test.PodWrapper) *test.PodWrapper { return w.Requests("cpu", "900m") })),
			onType: map[string]string{"big-0": "lin-16", "small-0": "lin-16", "small-3": "lin-16"},
		},
		"pods with topology stay where they are": {
			pools: linearPool(), claims: n(3),
			pods: list(pods("big", 8, func(w *test.PodWrapper) *test.PodWrapper { return w.Requests("cpu", "3500m") }),
				pods("small", 4, func(w *test.PodWrapper) *test.PodWrapper {
					return w.Requests("cpu", "900m").Labels(web).Spread(corev1.LabelTopologyZone, 4, corev1.DoNotSchedule, web)
				})),
		},
	})
}

// TestSolveRandomClustersLinearPrices runs the random clusters of
// TestSolveRandomClusters on size-proportional prices, where merging and
// emptying NodeClaims happen often: every placement must still satisfy
// every hard constraint, compaction must never leave more pods pending,
// and unless it let more pods be placed it must never cost more or add
// nodes.
func TestSolveRandomClustersLinearPrices(t *testing.T) {
	fewer := 0
	for seed := int64(1); seed <= 300; seed++ {
		in := randomCluster(rand.New(rand.NewSource(seed)))
		linearize(in)
		res := Solve(t.Context(), in)
		plain := solve(t.Context(), in, false)
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			checkInvariants(t, in, res)
			checkNoneFeasibleLeftOut(t, in, res)
			if len(res.PodErrors) > len(plain.PodErrors) {
				t.Errorf("%d pods unplaced, %d without compaction", len(res.PodErrors), len(plain.PodErrors))
			}
			// Room under a limit that compaction gives back goes to pending
			// pods (compactAndRetry), which may take new NodeClaims: only a
			// solve that places no more pods must cost no more.
			if len(res.PodErrors) == len(plain.PodErrors) &&
				(len(res.NodeClaims) > len(plain.NodeClaims) || res.Cost() > plain.Cost()*(1+1e-6)) {
				t.Errorf("compaction made it worse: %d nodes $%.4f, without %d nodes $%.4f",
					len(res.NodeClaims), res.Cost(), len(plain.NodeClaims), plain.Cost())
			}
		})
		if len(res.NodeClaims) < len(plain.NodeClaims) {
			fewer++
		}
	}
	// The generator must keep exercising compaction.
	if fewer < 50 {
		t.Errorf("compaction reduced the NodeClaims in only %d of 300 clusters", fewer)
	}
}

// linearize prices every instance type of the input by size: $0.04 per
// cpu, $0.005 per GiB, $1 per GPU on demand (plus a rounding error), spot
// at 40%; and adds a 16-cpu type so merged nodes have room to grow.
func linearize(in Input) {
	for _, np := range in.NodePools {
		np.InstanceTypes = append(np.InstanceTypes,
			makeType("general-xlarge", "amd64", 0, "cpu", "16", "memory", "32Gi", "pods", "80"))
		for _, it := range np.InstanceTypes {
			gpu := it.Capacity["nvidia.com/gpu"]
			cpu := it.Capacity.Cpu().AsApproximateFloat64()
			price := 0.04*cpu + 0.005*it.Capacity.Memory().AsApproximateFloat64()/(1<<30) + gpu.AsApproximateFloat64()
			// Larger types a rounding error dearer per unit, as float
			// prices come out: placement then opens small nodes, which
			// compaction must fold.
			price *= 1 + 1e-12*cpu
			for _, o := range it.Offerings {
				o.Price = price
				if o.CapacityType == "spot" {
					o.Price = price * 0.4
				}
			}
		}
	}
}
