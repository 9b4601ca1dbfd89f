package provisioning_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestSchedulingDecisionIsMeasuredFromTheTrigger checks upstream's
// karpenter_pods_scheduling_decision_duration_seconds and
// karpenter_pods_provisioning_scheduling_undecided_time_seconds: a pod
// the pod trigger saw waits, in the undecided gauge, until a pass decides
// about it, placed or not; the decision is observed once, measured from
// the trigger.
func TestSchedulingDecisionIsMeasuredFromTheTrigger(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	pods := h.pendingPods(test.MakePod("fits").Requests("cpu", "1").Obj(),
		test.MakePod("too-large").Requests("cpu", "100000").Obj())
	trigger := provisioning.NewPodController(provisioning.NewBatcher(h.clock, time.Second, 10*time.Second), h.cluster)
	for _, pod := range pods {
		if _, err := trigger.Reconcile(h.ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	h.clock.Step(4 * time.Second)
	want := `
# HELP karpenter_pods_provisioning_scheduling_undecided_time_seconds The time from when Karpenter has seen a pod without making a scheduling decision for the pod. Note: this calculated from a point in memory, not by the pod creation timestamp.
# TYPE karpenter_pods_provisioning_scheduling_undecided_time_seconds gauge
karpenter_pods_provisioning_scheduling_undecided_time_seconds{name="fits",namespace="default"} 4
karpenter_pods_provisioning_scheduling_undecided_time_seconds{name="too-large",namespace="default"} 4
`
	undecided := "karpenter_pods_provisioning_scheduling_undecided_time_seconds"
	if err := testutil.CollectAndCompare(state.NewCollector(h.cluster), strings.NewReader(want), undecided); err != nil {
		t.Error(err)
	}

	before := decisionHistogram(t)
	res := h.schedule()
	if len(res.Created) != 1 || len(res.Solve.PodErrors) != 1 {
		t.Fatalf("created %v with %d pod errors, want one NodeClaim and the large pod unschedulable", res.Created, len(res.Solve.PodErrors))
	}
	after := decisionHistogram(t)
	if got := after.GetSampleCount() - before.GetSampleCount(); got != 2 {
		t.Errorf("%d decisions observed, want 2 (the placed pod and the unschedulable one)", got)
	}
	if got := after.GetSampleSum() - before.GetSampleSum(); got != 8 {
		t.Errorf("decision durations grew by %vs, want 8s (4s each)", got)
	}
	if n := testutil.CollectAndCount(state.NewCollector(h.cluster), undecided); n != 0 {
		t.Errorf("%d undecided series after the pass, want 0", n)
	}

	// The next pass decides again about the unschedulable pod: not a first
	// decision, not observed again.
	h.clock.Step(time.Second)
	h.schedule()
	if got := decisionHistogram(t).GetSampleCount() - after.GetSampleCount(); got != 0 {
		t.Errorf("%d decisions observed by a second pass, want 0", got)
	}
}

// decisionHistogram gathers karpenter_pods_scheduling_decision_duration_seconds.
func decisionHistogram(t *testing.T) *dto.Histogram {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(state.PodSchedulingDecisionDuration); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(families) != 1 || len(families[0].Metric) != 1 {
		t.Fatalf("gathered %v, want one histogram series", families)
	}
	if labels := families[0].Metric[0].Label; len(labels) != 0 {
		t.Errorf("labels %v, want none (as upstream)", labels)
	}
	return families[0].Metric[0].Histogram
}
