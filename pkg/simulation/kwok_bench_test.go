package simulation

import (
	"fmt"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/catalog"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
)

// Upstream Karpenter's result on the kwok "basic" performance workload:
// 79 spot nodes costing $57.12/hour; and what karp reaches (70 nodes,
// $51.90/hour), with a little slack, so a change that loses the gain fails.
const (
	upstreamKwokNodes = 79
	upstreamKwokCost  = 57.12
	karpKwokNodes     = 72
	karpKwokCost      = 52.50
)

// kwokBasicInput is the workload of upstream's performance suite "basic"
// test: 500 pods at 900m cpu / 3100Mi and 500 at 3500m / 28Gi, on a
// NodePool that allows spot and on-demand and types of at most 32 cpu,
// with upstream kwok's 144 instance types.
func kwokBasicInput(tb testing.TB) Input {
	tb.Helper()
	types, err := catalog.LoadFile(fixtures.Bench(tb, "kwok-instance-types.json"), catalog.DefaultOptions())
	if err != nil {
		tb.Fatal(err)
	}
	np := test.MakeNodePool("default").
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand).
		Requirement("karpenter.kwok.sh/instance-cpu", corev1.NodeSelectorOpLt, "33").Obj()
	var pods []*corev1.Pod
	for i := 0; i < 500; i++ {
		pods = append(pods,
			test.MakePod(fmt.Sprintf("small-%d", i)).Label("app", "small").Requests("cpu", "900m", "memory", "3100Mi").Obj(),
			test.MakePod(fmt.Sprintf("big-%d", i)).Label("app", "big").Requests("cpu", "3500m", "memory", "28Gi").Obj())
	}
	return Input{Pods: pods, NodePools: []*NodePool{{NodePool: np, InstanceTypes: types}}}
}

// TestKwokBasicWorkload holds karp to upstream's result on the kwok
// workload (no more nodes, no higher $/hour) and to its own, every
// constraint kept. On marginal cost alone the solver launched 968 nodes
// here, one or two pods each.
func TestKwokBasicWorkload(t *testing.T) {
	in := kwokBasicInput(t)
	res := Solve(t.Context(), in)
	if len(res.PodErrors) > 0 {
		t.Fatalf("%d pods unplaced, first: %s", len(res.PodErrors), res.PodErrors[0].Status.Message())
	}
	checkInvariants(t, in, res)
	bound := pairBound(in)
	t.Logf("nodes by type and pod count: %v", shapes(res))
	t.Logf("%d nodes, $%.4f/hour, %.3f× the fractional bound $%.4f (upstream: %d nodes, $%.2f)",
		len(res.NodeClaims), res.Cost(), res.Cost()/bound, bound, upstreamKwokNodes, upstreamKwokCost)
	if len(res.NodeClaims) > min(upstreamKwokNodes, karpKwokNodes) {
		t.Errorf("%d nodes, want at most %d (upstream: %d)", len(res.NodeClaims), karpKwokNodes, upstreamKwokNodes)
	}
	if res.Cost() > min(upstreamKwokCost, karpKwokCost) {
		t.Errorf("$%.4f/hour, want at most $%.2f (upstream: $%.2f)", res.Cost(), karpKwokCost, upstreamKwokCost)
	}
}

// BenchmarkSolveKwokBasic reports nodes, $/hour and the bound ratio on the
// kwok workload (upstream: 79 nodes, $57.12/hour).
func BenchmarkSolveKwokBasic(b *testing.B) {
	in := kwokBasicInput(b)
	res := solveBench(b, func() *Result { return Solve(b.Context(), in) })
	if len(res.PodErrors) > 0 {
		b.Fatalf("%d pods unplaced", len(res.PodErrors))
	}
	b.ReportMetric(float64(len(res.NodeClaims)), "nodes")
	b.ReportMetric(res.Cost(), "usd/hour")
	b.ReportMetric(res.Cost()/pairBound(in), "x-bound")
}

// pairBound is the fractional lower bound on cost for cpu and memory
// together: the cheapest fractional mix of instance offerings whose
// capacity covers the pods' total cpu and memory (a two-resource linear
// program, whose optimum uses at most two offerings, so it enumerates
// single offerings and pairs). It ignores per-node overhead and packing
// and is never below lowerBound.
func pairBound(in Input) float64 {
	var cpu, mem float64
	for _, p := range in.Pods {
		r := scheduling.PodRequests(p)
		cpu += r.Cpu().AsApproximateFloat64()
		mem += r.Memory().AsApproximateFloat64()
	}
	type unit struct{ c, m, price float64 }
	var units []unit
	for _, np := range in.NodePools {
		reqs := poolRequirements(np.NodePool)
		for _, it := range np.InstanceTypes {
			if reqs.Intersects(it.Requirements) != nil {
				continue
			}
			if price, ok := cheapestAvailable(it, reqs); ok {
				units = append(units, unit{it.Capacity.Cpu().AsApproximateFloat64(), it.Capacity.Memory().AsApproximateFloat64(), price})
			}
		}
	}
	best := math.Inf(1)
	for i, u := range units {
		// One offering alone, as many as the scarcer resource needs.
		best = min(best, u.price*max(cpu/u.c, mem/u.m))
		for _, w := range units[i+1:] {
			// Two offerings covering both totals exactly: solve
			// x·u + y·w = (cpu, mem) for x, y ≥ 0.
			det := u.c*w.m - w.c*u.m
			if det == 0 {
				continue
			}
			x := (cpu*w.m - w.c*mem) / det
			y := (u.c*mem - cpu*u.m) / det
			if x >= 0 && y >= 0 {
				best = min(best, x*u.price+y*w.price)
			}
		}
	}
	return best
}

func cheapestAvailable(it *scheduling.InstanceType, reqs scheduling.Requirements) (float64, bool) {
	best, ok := 0.0, false
	for _, o := range it.Offerings {
		if o.Available && o.CompatibleWith(reqs) && (!ok || o.Price < best) {
			best, ok = o.Price, true
		}
	}
	return best, ok
}

// shapes counts NodeClaims by instance type and pod count.
func shapes(res *Result) map[string]int {
	out := map[string]int{}
	for _, nc := range res.NodeClaims {
		out[fmt.Sprintf("%s/%dpods", nc.InstanceType.Name, len(nc.Pods))]++
	}
	return out
}
