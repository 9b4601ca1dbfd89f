package simulation

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
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
			cpu := processCPU()
			for i := 0; i < b.N; i++ {
				res = Solve(b.Context(), in)
			}
			b.StopTimer()
			// CPU time of the process per solve (GC included): steadier than
			// wall time when other work shares the machine.
			b.ReportMetric(float64((processCPU()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
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
	for i := 0; i < 2000; i++ {
		name := fmt.Sprintf("node-%d", i)
		in.Nodes = append(in.Nodes, &Node{Name: name, Initialized: true,
			Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: fmt.Sprintf("test-zone-%d", 1+i%3),
				corev1.LabelInstanceTypeStable: "bench-it-3", karpv1.NodePoolLabelKey: "bench"},
			Allocatable: test.ResourceList("cpu", "3900m", "memory", "8182Mi", "pods", "40"),
			Pods:        []*corev1.Pod{test.MakePod(name+"-busy").Requests("cpu", "2", "memory", "4Gi").NodeName(name).Obj()}})
	}
	b.ReportAllocs()
	b.ResetTimer()
	var res *Result
	for i := 0; i < b.N; i++ {
		res = Solve(b.Context(), in)
	}
	b.StopTimer()
	placed := 0
	for _, ep := range res.ExistingNodes {
		placed += len(ep.Pods)
	}
	b.ReportMetric(float64(len(in.Pods))*float64(b.N)/b.Elapsed().Seconds(), "pods/sec")
	b.ReportMetric(float64(placed), "on-existing")
	b.ReportMetric(float64(len(res.NodeClaims)), "nodes")
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
