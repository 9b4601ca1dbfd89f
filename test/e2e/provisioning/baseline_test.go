package provisioning_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
		podTimeline(t, append(podsOf(t, "default", "baseline-small"), podsOf(t, "default", "baseline-large")...), start))
}

// podTimeline says when, after start, the last of the pods was created,
// bound and started, and when 10, 50 and 90% of them were bound. A pod's
// binding time is its Scheduled event's (the kube-scheduler's, to the
// millisecond): the PodScheduled condition's lastTransitionTime is no
// measure of it, kwok rewrites it when it marks the pod Running, seconds
// later in a burst. A pod without a Scheduled event (the scheduler's events
// are best effort) falls back to the condition, and the line says how many
// did.
func podTimeline(t testing.TB, pods []corev1.Pod, start time.Time) string {
	boundAt := scheduledAt(t, "default")
	var created, scheduled, started time.Time
	var bound []float64
	since := func(at time.Time) float64 { return at.Sub(start.Truncate(time.Second)).Seconds() }
	fallback := 0
	for i := range pods {
		created = later(created, pods[i].CreationTimestamp.Time)
		started = later(started, startedAt(&pods[i]))
		at, ok := boundAt[pods[i].Name]
		if !ok {
			for _, c := range pods[i].Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
					at, ok = c.LastTransitionTime.Time, true
					fallback++
				}
			}
		}
		if ok {
			scheduled = later(scheduled, at)
			bound = append(bound, since(at))
		}
	}
	slices.Sort(bound)
	quantile := func(q float64) float64 {
		if len(bound) == 0 {
			return 0
		}
		return bound[min(len(bound)-1, int(q*float64(len(bound))))]
	}
	return fmt.Sprintf("last pod created at %.1fs, last bound at %.1fs (10/50/90%% bound by %.1f/%.1f/%.1fs; %d of %d binding times from the pods' conditions, not Scheduled events), last started at %.0fs",
		since(created), since(scheduled), quantile(0.1), quantile(0.5), quantile(0.9), fallback, len(bound), since(started))
}

// scheduledAt maps the pods of the namespace to when the kube-scheduler
// bound them: the time of its Scheduled event about each.
func scheduledAt(t testing.TB, namespace string) map[string]time.Time {
	t.Helper()
	var list eventsv1.EventList
	if err := framework.Current(t).Client.List(context.Background(), &list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	out := map[string]time.Time{}
	for _, e := range list.Items {
		if e.Reason != "Scheduled" || e.Regarding.Kind != "Pod" || e.ReportingController != "default-scheduler" {
			continue
		}
		at := e.EventTime.Time
		if at.IsZero() {
			at = e.DeprecatedFirstTimestamp.Time
		}
		if prev, ok := out[e.Regarding.Name]; !ok || at.Before(prev) {
			out[e.Regarding.Name] = at
		}
	}
	return out
}
