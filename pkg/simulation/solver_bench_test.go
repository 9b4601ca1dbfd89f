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
