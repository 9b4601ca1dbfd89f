package disruption

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// BenchmarkScaleDown1000To300 runs 1,000 pause pods (250m cpu, 256Mi) on a
// WhenEmptyOrUnderutilized pool, scales them to 300 and reports how long
// karp takes to settle (no node deleting or tainted, the node set unchanged
// for 20 s), the pool's $/hour before and after, and the gap to the
// simulator's lower bound: the cost of packing the 300 pods from scratch.
// It is a benchmark (go test -bench), not part of the timed suite.
func BenchmarkScaleDown1000To300(b *testing.B) {
	const name = "e2e-scale"
	pool := test.MakeNodePool(name).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized).
		ConsolidateAfter(karpv1.MustParseNillableDuration("5s")).
		Budgets(karpv1.Budget{Nodes: "100%"}).Obj()
	f := framework.Current(b)
	cl := f.Client
	framework.CreatePool(b, cl, name, pool)
	// Leader election is off: on a loaded 2-core machine the lease can
	// lapse and stop the controller mid-run.
	framework.StartKarp(b, f, append(framework.FastDisruptionArgs, "--disable-leader-election")...)
	b.Cleanup(func() { framework.DeletePool(cl, name) })
	its, err := kwok.LoadInstanceTypes("", nil)
	if err != nil {
		b.Fatal(err)
	}

	deploy := framework.Deployment(name, name, name, 1000, "250m")
	framework.Create(b, cl, deploy)
	framework.Eventually(b, 15*time.Minute, func(ctx context.Context) (bool, string) {
		n := len(framework.AvailablePods(ctx, cl, name, map[string]string{"app": name}))
		return n == 1000, fmt.Sprintf("%d of 1000 pods available", n)
	})
	scaleSettle(b, cl, name)
	before, nodesBefore := framework.PoolCost(b.Context(), cl, name, its)

	b.ResetTimer()
	start := time.Now()
	current := deploy.DeepCopy()
	if err := cl.Get(b.Context(), client.ObjectKeyFromObject(deploy), current); err != nil {
		b.Fatal(err)
	}
	current.Spec.Replicas = ptr.To[int32](300)
	if err := cl.Update(b.Context(), current); err != nil {
		b.Fatal(err)
	}
	settledAt := scaleSettle(b, cl, name)
	b.StopTimer()
	after, nodesAfter := framework.PoolCost(b.Context(), cl, name, its)
	bound := lowerBound(b, pool, its, 300)
	b.ReportMetric(settledAt.Sub(start).Seconds(), "s-to-settle")
	b.ReportMetric(before, "$/h-before")
	b.ReportMetric(after, "$/h-after")
	b.ReportMetric(bound, "$/h-lower-bound")
	b.ReportMetric(100*(after/bound-1), "%-over-bound")
	b.Logf("nodes %d -> %d, $/h %.4f -> %.4f, lower bound %.4f, settled in %s", nodesBefore, nodesAfter, before, after, bound,
		settledAt.Sub(start).Round(time.Second))
}

// scaleSettle waits until the pool has no deleting NodeClaim, no tainted
// node, no pod of the namespace waits for a node, and its NodeClaims did
// not change for 20 s; it returns when the last change was seen.
func scaleSettle(b *testing.B, cl client.Client, pool string) time.Time {
	b.Helper()
	return framework.SettleNodePool(b, cl, framework.Settle{
		Pool: pool, Stable: 20 * time.Second, Timeout: 30 * time.Minute,
		Pods: func(ctx context.Context) (bool, string) {
			d := &corev1.PodList{}
			if err := cl.List(ctx, d, client.InNamespace(pool)); err != nil {
				return false, err.Error()
			}
			pending := 0
			for _, p := range d.Items {
				if p.Spec.NodeName == "" {
					pending++
				}
			}
			return pending == 0, fmt.Sprintf("%d pending pods", pending)
		},
	})
}

// lowerBound is what the simulator would pay to run n of the deployment's
// pods on empty capacity of the pool.
func lowerBound(b *testing.B, np *karpv1.NodePool, its []*scheduling.InstanceType, n int) float64 {
	var pods []*corev1.Pod
	for i := range n {
		pods = append(pods, test.MakePod(fmt.Sprintf("p-%d", i)).Namespace(np.Name).UID(fmt.Sprintf("p-%d", i)).
			NodeSelector(map[string]string{karpv1.NodePoolLabelKey: np.Name}).Requests("cpu", "250m", "memory", "256Mi").Obj())
	}
	res := simulation.Solve(b.Context(), simulation.Input{Pods: pods, NodePools: []*simulation.NodePool{{NodePool: np, InstanceTypes: its}}})
	if len(res.PodErrors) > 0 {
		b.Fatalf("lower bound: %d pods unplaced: %s", len(res.PodErrors), res.PodErrors[0].Status.Message())
	}
	return res.Cost()
}
