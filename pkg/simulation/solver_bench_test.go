package simulation

import (
	"context"
	"testing"
)

// BenchmarkSolveDiverse runs the scheduling benchmark upstream Karpenter
// publishes numbers for (400 instance types, diverse pods).
func BenchmarkSolveDiverse(b *testing.B) {
	for _, n := range []string{"1000", "5000", "20000"} {
		b.Run(n, func(b *testing.B) {
			in := benchInput(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			var res *Result
			for i := 0; i < b.N; i++ {
				res = Solve(context.Background(), in)
			}
			b.StopTimer()
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
