package provisioning_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// TestBenchmarkBaselineNoAutoscaler is the reference for
// TestBenchmarkThousandPods: the same 1,000 pods on 80 nodes made in
// advance, with no autoscaler running, so the difference between the two
// is what the autoscaler adds. It reports, not asserts, the time from
// Deployment creation to the last container start.
func TestBenchmarkBaselineNoAutoscaler(t *testing.T) {
	if os.Getenv(benchEnv) == "" {
		t.Skipf("benchmark: set %s=1 to run it", benchEnv)
	}
	stopController()
	cl := framework.Current(t).Client
	const nodes = 80
	selector := map[string]string{"karp.sh/bench": "baseline"}
	for i := range nodes {
		node := framework.MakeKWOKNode(fmt.Sprintf("baseline-%02d", i))
		capacity := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("32"),
			corev1.ResourceMemory: resource.MustParse("256Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		}
		node.Status.Capacity, node.Status.Allocatable = capacity, capacity
		node.Labels["karp.sh/bench"] = "baseline"
		if err := cl.Create(t.Context(), node); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cl.Delete(context.Background(), node) })
	}
	framework.Eventually(t, 2*time.Minute, func(ctx context.Context) (bool, string) {
		list := &corev1.NodeList{}
		if err := cl.List(ctx, list); err != nil {
			return false, err.Error()
		}
		ready := 0
		for i := range list.Items {
			if list.Items[i].Labels["karp.sh/bench"] == "baseline" && framework.NodeReady(&list.Items[i]) {
				ready++
			}
		}
		return ready == nodes, fmt.Sprintf("%d of %d nodes ready", ready, nodes)
	})

	small := deployment("baseline-small", 500, "900m", "3100Mi", selector)
	large := deployment("baseline-large", 500, "3500m", "28Gi", selector)
	requestsBefore := apiRequests(t)
	start := time.Now()
	create(t, small, large)
	lastReady := waitAllRunning(t, []string{"baseline-small", "baseline-large"}, 1000)
	t.Logf("BENCH baseline API requests until all pods ran: %s", requestDelta(requestsBefore, apiRequests(t)))
	t.Logf("BENCH baseline: 1000 pods Running on %d pre-made nodes in %.1fs, no autoscaler; %s",
		nodes, lastReady.Sub(start.Truncate(time.Second)).Seconds(),
		podTimeline(append(podsOf(t, "default", "baseline-small"), podsOf(t, "default", "baseline-large")...), start))
}

// podTimeline says when, after start, the last of the pods was created,
// bound and started, so a slow run shows which stage was slow: the
// ReplicaSet controller, the scheduler (and the autoscaler before it) or
// kwok.
func podTimeline(pods []corev1.Pod, start time.Time) string {
	var created, scheduled, started time.Time
	for i := range pods {
		created = later(created, pods[i].CreationTimestamp.Time)
		for _, c := range pods[i].Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
				scheduled = later(scheduled, c.LastTransitionTime.Time)
			}
		}
		started = later(started, startedAt(&pods[i]))
	}
	since := func(at time.Time) float64 { return at.Sub(start.Truncate(time.Second)).Seconds() }
	var bound []float64
	for i := range pods {
		for _, c := range pods[i].Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
				bound = append(bound, since(c.LastTransitionTime.Time))
			}
		}
	}
	slices.Sort(bound)
	quantile := func(q float64) float64 {
		if len(bound) == 0 {
			return 0
		}
		return bound[min(len(bound)-1, int(q*float64(len(bound))))]
	}
	return fmt.Sprintf("last pod created at %.0fs, last bound at %.0fs (10/50/90%% bound by %.0f/%.0f/%.0fs), last started at %.0fs",
		since(created), since(scheduled), quantile(0.1), quantile(0.5), quantile(0.9), since(started))
}
