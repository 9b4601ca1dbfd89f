package simulation

import (
	"testing"
)

// BenchmarkSolveDiverse runs the scheduling benchmark upstream Karpenter
// publishes numbers for (400 instance types, diverse pods).
func BenchmarkSolveDiverse(b *testing.B) {
	for _, n := range []string{"1000", "5000", "20000"} {
		b.Run(n, func(b *testing.B) {
			in := benchInput(b, n)
			res := solveBench(b, func() *Result { return Solve(b.Context(), in) })
			if len(res.PodErrors) > 0 {
				b.Fatalf("%d pods unplaced, first: %s", len(res.PodErrors), res.PodErrors[0].Status.Message())
			}
			b.ReportMetric(float64(len(in.Pods))*float64(b.N)/b.Elapsed().Seconds(), "pods/sec")
			b.ReportMetric(float64(len(res.NodeClaims)), "nodes")
			b.ReportMetric(res.Cost(), "usd/hour")
			b.ReportMetric(res.Cost()/lowerBound(in), "x-bound")
		})
	}
}

// TestLowerBoundMatchesTheIssue pins the definition of the fractional lower
// bound used by the benchmark to the published numbers: for each resource,
// total pod requests × the cheapest $ per unit of instance capacity over all
// offerings; the bound is the largest over resources (cpu here).
func TestLowerBoundMatchesTheIssue(t *testing.T) {
	for n, want := range map[string]float64{"1000": 206.86, "5000": 1064.26, "20000": 4250.31} {
		if got := lowerBound(benchInput(t, n)); got < want-0.005 || got > want+0.005 {
			t.Errorf("bound for %s pods = %.4f, want %.2f", n, got, want)
		}
	}
}

// BenchmarkSolveOntoExistingNodes places the 5,000 diverse pods into a
// cluster that already has 2,000 partly used nodes (the shape of a
// consolidation what-if), reporting how many still need new NodeClaims.
func BenchmarkSolveOntoExistingNodes(b *testing.B) {
	in := benchInput(b, "5000")
	addBusyNodes(&in, 2000)
	res := solveBench(b, func() *Result { return Solve(b.Context(), in) })
	placed := 0
	for _, ep := range res.ExistingNodes {
		placed += len(ep.Pods)
	}
	b.ReportMetric(float64(len(in.Pods))*float64(b.N)/b.Elapsed().Seconds(), "pods/sec")
	b.ReportMetric(float64(placed), "on-existing")
	b.ReportMetric(float64(len(res.NodeClaims)), "nodes")
}
