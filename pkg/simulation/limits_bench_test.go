package simulation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// BenchmarkSolveBindingLimit measures what the least-flexible-first
// second solve costs when a NodePool limit binds. The diverse benchmark
// pods go to two copies of the benchmark NodePool: "limited" (weight 10,
// cpu limited to a third of the pods' total cpu request) and "other"
// (weight 0, unlimited); every second pod may only use "limited". Largest
// first, pods that "other" could take use "limited"'s room and pods with
// nowhere else to go stay pending, so Solve solves a second time.
// largest-first is that first solve alone; with-retry is Solve.
func BenchmarkSolveBindingLimit(b *testing.B) {
	for _, n := range []string{"1000", "5000"} {
		in := bindingLimitInput(b, n)
		for _, variant := range []struct {
			name  string
			solve func(*testing.B) *Result
		}{
			{"largest-first", func(b *testing.B) *Result {
				return solveOrdered(b.Context(), in, true, func(_ *solver, pods []*podInfo) { sortPods(pods) })
			}},
			{"with-retry", func(b *testing.B) *Result { return Solve(b.Context(), in) }},
		} {
			b.Run(n+"/"+variant.name, func(b *testing.B) {
				res := solveBench(b, func() *Result { return variant.solve(b) })
				b.ReportMetric(float64(len(res.PodErrors)), "pending")
				b.ReportMetric(float64(len(res.NodeClaims)), "nodes")
				b.ReportMetric(res.Cost(), "usd/hour")
			})
		}
	}
}

// bindingLimitInput is benchInput(n) split over a limited and an
// unlimited NodePool, every second pod kept to the limited one.
func bindingLimitInput(b *testing.B, n string) Input {
	b.Helper()
	in := benchInput(b, n)
	base := in.NodePools[0]
	total := resource.Quantity{}
	for i, p := range in.Pods {
		total.Add(scheduling.PodRequests(p)[corev1.ResourceCPU])
		if i%2 == 1 {
			continue
		}
		p = p.DeepCopy()
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		p.Spec.NodeSelector[karpv1.NodePoolLabelKey] = "limited"
		in.Pods[i] = p
	}
	limited := base.NodePool.DeepCopy()
	limited.Name = "limited"
	weight := int32(10)
	limited.Spec.Weight = &weight
	limited.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: *resource.NewMilliQuantity(total.MilliValue()/3, resource.DecimalSI)}
	other := base.NodePool.DeepCopy()
	other.Name = "other"
	other.Spec.Limits = nil
	in.NodePools = []*NodePool{{NodePool: limited, InstanceTypes: base.InstanceTypes}, {NodePool: other, InstanceTypes: base.InstanceTypes}}
	if res := Solve(b.Context(), in); len(res.PodErrors) == 0 {
		b.Fatalf("the %s-pod input leaves no pod pending: the limit does not bind", n)
	}
	return in
}
