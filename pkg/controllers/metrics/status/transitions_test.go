package status_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/metrics/status"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

// A condition whose status changes is counted, the time it spent in the
// previous status observed, and an event named after the condition type
// recorded on the object, as upstream's status controller does.
func TestConditionTransitionsAreCountedTimedAndReported(t *testing.T) {
	h.Reset(t)
	r, total, seconds := status.NewNodeClaimTransitions(h.Recorder, []string{karpv1.NodePoolLabelKey})
	since := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

	nc := test.MakeNodeClaim("c1").NodePool("p").Obj()
	h.Create(t, nc)
	nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionUnknown, Reason: "AwaitingReconciliation",
		LastTransitionTime: metav1.NewTime(since)}}
	h.UpdateStatus(t, nc)
	if _, err := operatortest.Reconcile(t, h, r, "c1"); err != nil {
		t.Fatal(err)
	}
	// Reconciling again without a change counts nothing more.
	if _, err := operatortest.Reconcile(t, h, r, "c1"); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(total.WithLabelValues(karpv1.ConditionTypeLaunched, "Unknown", "AwaitingReconciliation", "p")); got != 1 {
		t.Errorf("first sight counted %v times, want 1", got)
	}

	h.Get(t, nc)
	nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched",
		LastTransitionTime: metav1.NewTime(since.Add(30 * time.Second))}}
	h.UpdateStatus(t, nc)
	if _, err := operatortest.Reconcile(t, h, r, "c1"); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(total.WithLabelValues(karpv1.ConditionTypeLaunched, "True", "Launched", "p")); got != 1 {
		t.Errorf("transition to True counted %v times, want 1", got)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(seconds); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(families) != 1 || len(families[0].Metric) != 1 {
		t.Fatalf("duration series: %v, want one (Launched Unknown)", families)
	}
	if hist := families[0].Metric[0].Histogram; hist.GetSampleCount() != 1 || hist.GetSampleSum() != 30 {
		t.Errorf("Unknown lasted %v s over %d samples, want 30 s once", hist.GetSampleSum(), hist.GetSampleCount())
	}
	h.WaitForEvent(t, "NodeClaim", "c1", karpv1.ConditionTypeLaunched)
}
