package simulate

import (
	"path/filepath"
	"testing"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
)

// BenchmarkRun is `karp simulate` on the scheduling benchmark (400
// instance types, one NodePool, diverse pods), parsing included.
func BenchmarkRun(b *testing.B) {
	dir := fixtures.Bench(b, "")
	for _, n := range []string{"1000", "20000"} {
		b.Run(n, func(b *testing.B) {
			var rep *Report
			for i := 0; i < b.N; i++ {
				types, err := kwok.LoadInstanceTypes(filepath.Join(dir, "instance-types-400.json"), nil)
				if err != nil {
					b.Fatal(err)
				}
				rep, err = Run(b.Context(), Options{Paths: []string{filepath.Join(dir, "pods-diverse-"+n+".json"), filepath.Join(dir, "nodepool.yaml")}, InstanceTypes: types})
				if err != nil {
					b.Fatal(err)
				}
			}
			if !rep.AllPlaced() {
				b.Fatalf("%d pods pending", len(rep.Unschedulable))
			}
			b.ReportMetric(float64(rep.PendingPods)*float64(b.N)/b.Elapsed().Seconds(), "pods/sec")
			b.ReportMetric(float64(rep.TotalNodes), "nodes")
		})
	}
}
