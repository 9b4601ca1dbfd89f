package status_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	metricsstatus "github.com/karp-autoscaler/karp/pkg/metrics/status"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/awstest"
)

// controller returns kind's controller over reader, recording into a
// fresh pedantic registry.
func controller(t *testing.T, reader client.Reader, clk *clocktesting.FakeClock, kind metricsstatus.Kind) (*metricsstatus.Controller, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	m, err := metricsstatus.RegisterMetrics(reg, reader, clk, kind)
	if err != nil {
		t.Fatal(err)
	}
	return metricsstatus.NewController(reader, clk, h.Recorder, kind, m), reg
}

// reconcileName waits for the cache and reconciles the named object.
func reconcileName(t *testing.T, r reconcile.Reconciler, name string) {
	t.Helper()
	h.Synced(t)
	if _, err := r.Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

// histogram returns the series of the named histogram whose labels
// include want, failing when there is not exactly one.
func histogram(t *testing.T, reg prometheus.Gatherer, name string, want map[string]string) *dto.Histogram {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var found []*dto.Histogram
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue series
				}
			}
			found = append(found, m.Histogram)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %s series with %v, want 1", len(found), name, want)
	}
	return found[0]
}

// A condition whose status changes is counted, the time it spent in the
// previous status observed, and an event named after the condition type
// recorded on the object, as upstream's status controller does.
func TestConditionTransitionsAreCountedTimedAndReported(t *testing.T) {
	h.Reset(t)
	r, reg := controller(t, h.Client, h.Clock, metricsstatus.NodeClaims([]string{karpv1.NodePoolLabelKey}))
	since := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

	nc := test.MakeNodeClaim("c1").NodePool("p").Obj()
	h.Create(t, nc)
	nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionUnknown, Reason: "AwaitingReconciliation",
		LastTransitionTime: metav1.NewTime(since)}}
	h.UpdateStatus(t, nc)
	reconcileName(t, r, "c1")
	// Reconciling again without a change counts nothing more.
	reconcileName(t, r, "c1")
	want := `
# HELP operator_nodeclaim_status_condition_transitions_total The count of transitions of a given object, type and status.
# TYPE operator_nodeclaim_status_condition_transitions_total counter
operator_nodeclaim_status_condition_transitions_total{karpenter_sh_nodepool="p",reason="AwaitingReconciliation",status="Unknown",type="Launched"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "operator_nodeclaim_status_condition_transitions_total"); err != nil {
		t.Errorf("first sight: %v", err)
	}

	h.Get(t, nc)
	nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched",
		LastTransitionTime: metav1.NewTime(since.Add(30 * time.Second))}}
	h.UpdateStatus(t, nc)
	reconcileName(t, r, "c1")
	want += `operator_nodeclaim_status_condition_transitions_total{karpenter_sh_nodepool="p",reason="Launched",status="True",type="Launched"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "operator_nodeclaim_status_condition_transitions_total"); err != nil {
		t.Errorf("transition to True: %v", err)
	}
	hist := histogram(t, reg, "operator_nodeclaim_status_condition_transition_seconds", map[string]string{"type": "Launched", "status": "Unknown", "karpenter_sh_nodepool": "p"})
	if hist.GetSampleCount() != 1 || hist.GetSampleSum() != 30 {
		t.Errorf("Unknown lasted %v s over %d samples, want 30 s once", hist.GetSampleSum(), hist.GetSampleCount())
	}
	// Upstream's buckets: 0.5s doubling to 8192s.
	if b := hist.GetBucket(); len(b) != 15 || b[0].GetUpperBound() != 0.5 || b[14].GetUpperBound() != 8192 {
		t.Errorf("buckets %v, want 0.5 .. 8192 doubling", b)
	}
	// The deprecated series, with the default buckets as operatorpkg's.
	old := histogram(t, reg, "operator_status_condition_transition_seconds", map[string]string{"group": karpv1.Group, "kind": "NodeClaim", "type": "Launched"})
	if old.GetSampleCount() == 0 || len(old.GetBucket()) != len(prometheus.DefBuckets) {
		t.Errorf("deprecated transition_seconds: %d samples, %d buckets; want samples with the default buckets", old.GetSampleCount(), len(old.GetBucket()))
	}
	h.WaitForEvent(t, "NodeClaim", "c1", karpv1.ConditionTypeLaunched)
}

// Once an object seen terminating is gone, how long it took from its
// deletion timestamp is observed, under the kind's labels and the
// deprecated group and kind.
func TestTerminatedObjectsObserveTheirTerminationDuration(t *testing.T) {
	h.Reset(t)
	ctx := t.Context()
	r, reg := controller(t, h.Client, h.Clock, metricsstatus.NodeClaims([]string{karpv1.NodePoolLabelKey}))
	nc := test.MakeNodeClaim("going").NodePool("p").Finalizers(karpv1.TerminationFinalizer).Obj()
	h.Create(t, nc)
	reconcileName(t, r, "going")
	if err := h.Env.Client.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	h.Get(t, nc)
	reconcileName(t, r, "going")
	if n, _ := testutil.GatherAndCount(reg, "operator_nodeclaim_termination_duration_seconds"); n != 0 {
		t.Fatalf("%d termination durations while terminating, want 0", n)
	}
	h.Clock.SetTime(nc.DeletionTimestamp.Add(3 * time.Minute))
	nc.Finalizers = nil
	if err := h.Env.Client.Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	reconcileName(t, r, "going")
	got := histogram(t, reg, "operator_nodeclaim_termination_duration_seconds", map[string]string{"karpenter_sh_nodepool": "p"})
	if got.GetSampleCount() != 1 || got.GetSampleSum() != 180 {
		t.Errorf("termination took %v s over %d samples, want 180 s once", got.GetSampleSum(), got.GetSampleCount())
	}
	old := histogram(t, reg, "operator_termination_duration_seconds", map[string]string{"group": karpv1.Group, "kind": "NodeClaim"})
	if old.GetSampleCount() == 0 {
		t.Error("no deprecated operator_termination_duration_seconds sample")
	}
	// Gone and forgotten: a second not-found reconcile observes nothing.
	reconcileName(t, r, "going")
	if got := histogram(t, reg, "operator_nodeclaim_termination_duration_seconds", nil); got.GetSampleCount() != 1 {
		t.Errorf("%d samples after a second reconcile, want 1", got.GetSampleCount())
	}
}

// Nodes' transitions and terminations carry upstream's Node labels.
func TestNodeTransitionsAndTerminationsAreObserved(t *testing.T) {
	h.Reset(t)
	ctx := t.Context()
	_, _, nodes := kwokKinds()
	r, reg := controller(t, h.Client, h.Clock, nodes)
	since := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	node := test.MakeNode("n1").Label(karpv1.NodePoolLabelKey, "p").Label(karpv1.NodeInitializedLabelKey, "true").Obj()
	node.Finalizers = []string{karpv1.TerminationFinalizer}
	h.Create(t, node)
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastTransitionTime: metav1.NewTime(since)}}
	h.UpdateStatus(t, node)
	reconcileName(t, r, "n1")
	h.Get(t, node)
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
		LastTransitionTime: metav1.NewTime(since.Add(time.Hour))}}
	h.UpdateStatus(t, node)
	reconcileName(t, r, "n1")
	want := `
# HELP operator_node_status_condition_transitions_total The count of transitions of a given object, type and status.
# TYPE operator_node_status_condition_transitions_total counter
operator_node_status_condition_transitions_total{karpenter_kwok_sh_kwoknodeclass="",karpenter_sh_initialized="true",karpenter_sh_nodepool="p",reason="KubeletNotReady",status="False",type="Ready"} 1
operator_node_status_condition_transitions_total{karpenter_kwok_sh_kwoknodeclass="",karpenter_sh_initialized="true",karpenter_sh_nodepool="p",reason="KubeletReady",status="True",type="Ready"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "operator_node_status_condition_transitions_total"); err != nil {
		t.Error(err)
	}
	if got := histogram(t, reg, "operator_node_status_condition_transition_seconds", map[string]string{"status": "True"}); got.GetSampleSum() != 3600 {
		t.Errorf("Ready=True lasted %v s, want 3600", got.GetSampleSum())
	}
	h.WaitForEvent(t, "Node", "n1", string(corev1.NodeReady))

	if err := h.Env.Client.Delete(ctx, node); err != nil {
		t.Fatal(err)
	}
	h.Get(t, node)
	reconcileName(t, r, "n1")
	h.Clock.SetTime(node.DeletionTimestamp.Add(90 * time.Second))
	node.Finalizers = nil
	if err := h.Env.Client.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	reconcileName(t, r, "n1")
	got := histogram(t, reg, "operator_node_termination_duration_seconds", map[string]string{"karpenter_sh_nodepool": "p", "karpenter_sh_initialized": "true"})
	if got.GetSampleCount() != 1 || got.GetSampleSum() != 90 {
		t.Errorf("node termination took %v s over %d samples, want 90 s once", got.GetSampleSum(), got.GetSampleCount())
	}
	if n, _ := testutil.GatherAndCount(reg, "operator_termination_duration_seconds", "operator_status_condition_transitions_total"); n != 0 {
		t.Errorf("%d deprecated series for Nodes, want none", n)
	}
}

// EC2NodeClasses' transitions and terminations are observed, with the
// default buckets, as upstream's AWS provider registers them.
func TestEC2NodeClassTransitionsAndTerminationsAreObserved(t *testing.T) {
	ctx := t.Context()
	// Read straight from the API server: the harness's cache does not
	// watch EC2NodeClasses.
	r, reg := controller(t, h.Env.Client, h.Clock, metricsstatus.EC2NodeClasses())
	since := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	nc := awstest.NewNodeClass(func(nc *awsv1.EC2NodeClass) { nc.Finalizers = []string{"karpenter.k8s.aws/termination"} })
	h.Create(t, nc)
	nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeReady, Status: metav1.ConditionFalse, Reason: "SubnetsNotReady",
		LastTransitionTime: metav1.NewTime(since)}}
	h.UpdateStatus(t, nc)
	reconcileName(t, r, nc.Name)
	h.Get(t, nc)
	nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready",
		LastTransitionTime: metav1.NewTime(since.Add(10 * time.Second))}}
	h.UpdateStatus(t, nc)
	reconcileName(t, r, nc.Name)
	got := histogram(t, reg, "operator_ec2nodeclass_status_condition_transition_seconds", map[string]string{"type": "Ready", "status": "False"})
	if got.GetSampleSum() != 10 || len(got.GetBucket()) != len(prometheus.DefBuckets) {
		t.Errorf("Ready=False lasted %v s in %d buckets, want 10 s in the default buckets", got.GetSampleSum(), len(got.GetBucket()))
	}
	histogram(t, reg, "operator_status_condition_transition_seconds", map[string]string{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass"})

	if err := h.Env.Client.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	h.Get(t, nc)
	reconcileName(t, r, nc.Name)
	h.Clock.SetTime(nc.DeletionTimestamp.Add(5 * time.Second))
	nc.Finalizers = nil
	if err := h.Env.Client.Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	reconcileName(t, r, nc.Name)
	if got := histogram(t, reg, "operator_ec2nodeclass_termination_duration_seconds", nil); got.GetSampleCount() != 1 || got.GetSampleSum() != 5 {
		t.Errorf("EC2NodeClass termination took %v s over %d samples, want 5 s once", got.GetSampleSum(), got.GetSampleCount())
	}
	histogram(t, reg, "operator_termination_duration_seconds", map[string]string{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass"})
}
