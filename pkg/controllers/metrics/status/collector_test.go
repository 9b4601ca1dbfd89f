package status_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/metrics/status"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func TestStatusConditionMetricsHaveUpstreamNamesAndLabels(t *testing.T) {
	h.Reset(t)
	ctx := t.Context()
	since := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(since.Add(90 * time.Second))

	nc := test.MakeNodeClaim("c1").NodePool("p").Label("karpenter.kwok.sh/kwoknodeclass", "default").Obj()
	if err := h.Env.Client.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched",
		LastTransitionTime: metav1.NewTime(since), ObservedGeneration: nc.Generation}}
	if err := h.Env.Client.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if err := h.Env.Client.Create(ctx, test.MakeNodePool("p").Obj()); err != nil {
		t.Fatal(err)
	}

	reg := prometheus.NewPedanticRegistry()
	labels := []string{kwokv1alpha1.Group + "/kwoknodeclass", karpv1.NodePoolLabelKey}
	if err := reg.Register(status.NewCollector(h.Env.Client, clk, labels)); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP operator_nodeclaim_status_condition_count The number of a condition for a given object, type and status. e.g. Alarm := Available=False > 0
# TYPE operator_nodeclaim_status_condition_count gauge
operator_nodeclaim_status_condition_count{karpenter_kwok_sh_kwoknodeclass="default",karpenter_sh_nodepool="p",name="c1",namespace="",reason="Launched",status="True",type="Launched"} 1
# HELP operator_nodeclaim_status_condition_current_status_seconds The current amount of time in seconds that a status condition has been in a specific state. Alarm := P99(Updated=Unknown) > 5 minutes
# TYPE operator_nodeclaim_status_condition_current_status_seconds gauge
operator_nodeclaim_status_condition_current_status_seconds{karpenter_kwok_sh_kwoknodeclass="default",karpenter_sh_nodepool="p",name="c1",namespace="",reason="Launched",status="True",type="Launched"} 90
# HELP operator_status_condition_count The number of a condition for a given object, type and status. e.g. Alarm := Available=False > 0
# TYPE operator_status_condition_count gauge
operator_status_condition_count{group="karpenter.sh",kind="NodeClaim",name="c1",namespace="",reason="Launched",status="True",type="Launched"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"operator_nodeclaim_status_condition_count", "operator_nodeclaim_status_condition_current_status_seconds", "operator_status_condition_count"); err != nil {
		t.Error(err)
	}
	// A NodePool without conditions has no series; one with a condition does.
	if n := testutil.CollectAndCount(status.NewCollector(h.Env.Client, clk, labels), "operator_nodepool_status_condition_count"); n != 0 {
		t.Errorf("%d NodePool series before any condition, want 0", n)
	}
	pool := &karpv1.NodePool{}
	if err := h.Env.Client.Get(ctx, keyOf("p"), pool); err != nil {
		t.Fatal(err)
	}
	pool.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeReady, Status: metav1.ConditionFalse, Reason: "NodeClassNotFound",
		LastTransitionTime: metav1.NewTime(since)}}
	if err := h.Env.Client.Status().Update(ctx, pool); err != nil {
		t.Fatal(err)
	}
	wantPool := `
# HELP operator_nodepool_status_condition_count The number of a condition for a given object, type and status. e.g. Alarm := Available=False > 0
# TYPE operator_nodepool_status_condition_count gauge
operator_nodepool_status_condition_count{name="p",namespace="",reason="NodeClassNotFound",status="False",type="Ready"} 1
`
	if err := testutil.CollectAndCompare(status.NewCollector(h.Env.Client, clk, labels), strings.NewReader(wantPool), "operator_nodepool_status_condition_count"); err != nil {
		t.Error(err)
	}
}

func keyOf(name string) client.ObjectKey { return client.ObjectKey{Name: name} }

func TestTerminatingObjectsReportTheirTerminationTime(t *testing.T) {
	h.Reset(t)
	ctx := t.Context()
	nc := test.MakeNodeClaim("going").NodePool("p").Finalizers(karpv1.TerminationFinalizer).Obj()
	if err := h.Env.Client.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	labels := []string{karpv1.NodePoolLabelKey}
	clk := clocktesting.NewFakeClock(time.Now())
	if n := testutil.CollectAndCount(status.NewCollector(h.Env.Client, clk, labels), "operator_nodeclaim_termination_current_time_seconds"); n != 0 {
		t.Fatalf("%d termination series before the deletion, want 0", n)
	}
	if err := h.Env.Client.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if err := h.Env.Client.Get(ctx, keyOf("going"), nc); err != nil {
		t.Fatal(err)
	}
	// Two minutes after the deletion timestamp the API server set.
	clk.SetTime(nc.DeletionTimestamp.Add(2 * time.Minute))
	want := `
# HELP operator_nodeclaim_termination_current_time_seconds The current amount of time in seconds that an object has been in terminating state.
# TYPE operator_nodeclaim_termination_current_time_seconds gauge
operator_nodeclaim_termination_current_time_seconds{karpenter_sh_nodepool="p",name="going",namespace=""} 120
# HELP operator_termination_current_time_seconds The current amount of time in seconds that an object has been in terminating state.
# TYPE operator_termination_current_time_seconds gauge
operator_termination_current_time_seconds{group="karpenter.sh",kind="NodeClaim",name="going",namespace=""} 120
`
	if err := testutil.CollectAndCompare(status.NewCollector(h.Env.Client, clk, labels), strings.NewReader(want),
		"operator_nodeclaim_termination_current_time_seconds", "operator_termination_current_time_seconds"); err != nil {
		t.Error(err)
	}
	nc.Finalizers = nil
	if err := h.Env.Client.Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
}
