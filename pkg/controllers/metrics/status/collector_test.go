package status_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1beta1"
	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/metrics/status"
	metricsstatus "github.com/karp-autoscaler/karp/pkg/metrics/status"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/awstest"
)

// kwokKinds are the core kinds as the kwok provider labels them.
func kwokKinds() (nodeClaims, nodePools, nodes metricsstatus.Kind) {
	kinds := status.Kinds([]string{kwokv1alpha1.Group + "/kwoknodeclass"})
	return kinds[0], kinds[1], kinds[2]
}

// registry registers kinds' metrics over the API server (no cache to
// wait for) into a fresh pedantic registry.
func registry(t *testing.T, clk *clocktesting.FakeClock, kinds ...metricsstatus.Kind) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	for _, k := range kinds {
		if _, err := metricsstatus.RegisterMetrics(reg, h.Env.Client, clk, k); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func TestStatusConditionMetricsHaveUpstreamNamesAndLabels(t *testing.T) {
	h.Reset(t)
	ctx := t.Context()
	since := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(since.Add(90 * time.Second))

	nc := test.MakeNodeClaim("c1").NodePool("p").Label("karpenter.kwok.sh/kwoknodeclass", "default").Obj()
	h.Create(t, nc)
	nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched",
		LastTransitionTime: metav1.NewTime(since), ObservedGeneration: nc.Generation}}
	h.UpdateStatus(t, nc)
	h.Create(t, test.MakeNodePool("p").Obj())

	nodeClaims, nodePools, _ := kwokKinds()
	reg := registry(t, clk, nodeClaims, nodePools)
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
	if n := testutil.CollectAndCount(metricsstatus.NewCollector(h.Env.Client, clk, nodePools), "operator_nodepool_status_condition_count"); n != 0 {
		t.Errorf("%d NodePool series before any condition, want 0", n)
	}
	pool := &karpv1.NodePool{}
	if err := h.Env.Client.Get(ctx, keyOf("p"), pool); err != nil {
		t.Fatal(err)
	}
	pool.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeReady, Status: metav1.ConditionFalse, Reason: "NodeClassNotFound",
		LastTransitionTime: metav1.NewTime(since)}}
	h.UpdateStatus(t, pool)
	wantPool := `
# HELP operator_nodepool_status_condition_count The number of a condition for a given object, type and status. e.g. Alarm := Available=False > 0
# TYPE operator_nodepool_status_condition_count gauge
operator_nodepool_status_condition_count{name="p",namespace="",reason="NodeClassNotFound",status="False",type="Ready"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(wantPool), "operator_nodepool_status_condition_count"); err != nil {
		t.Error(err)
	}
}

// Nodes' conditions are reported with upstream's Node labels (the
// NodeClass labels, the NodePool and whether the node initialized) and,
// as upstream's Node status controller, not under the deprecated names.
func TestNodeConditionsAreReportedWithUpstreamLabels(t *testing.T) {
	h.Reset(t)
	since := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(since.Add(time.Minute))
	node := test.MakeNode("n1").Label(karpv1.NodePoolLabelKey, "p").Label(karpv1.NodeInitializedLabelKey, "true").
		Label("karpenter.kwok.sh/kwoknodeclass", "default").Obj()
	h.Create(t, node)
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastTransitionTime: metav1.NewTime(since), LastHeartbeatTime: metav1.NewTime(since)}}
	h.UpdateStatus(t, node)

	nodeClaims, _, nodes := kwokKinds()
	reg := registry(t, clk, nodeClaims, nodes)
	want := `
# HELP operator_node_status_condition_count The number of a condition for a given object, type and status. e.g. Alarm := Available=False > 0
# TYPE operator_node_status_condition_count gauge
operator_node_status_condition_count{karpenter_kwok_sh_kwoknodeclass="default",karpenter_sh_initialized="true",karpenter_sh_nodepool="p",name="n1",namespace="",reason="KubeletReady",status="True",type="Ready"} 1
# HELP operator_node_status_condition_current_status_seconds The current amount of time in seconds that a status condition has been in a specific state. Alarm := P99(Updated=Unknown) > 5 minutes
# TYPE operator_node_status_condition_current_status_seconds gauge
operator_node_status_condition_current_status_seconds{karpenter_kwok_sh_kwoknodeclass="default",karpenter_sh_initialized="true",karpenter_sh_nodepool="p",name="n1",namespace="",reason="KubeletReady",status="True",type="Ready"} 60
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"operator_node_status_condition_count", "operator_node_status_condition_current_status_seconds"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg, "operator_status_condition_count"); err != nil || n != 0 {
		t.Errorf("%d deprecated series (%v), want none: upstream's Node status controller emits no deprecated metrics", n, err)
	}
}

// EC2NodeClasses are reported under operator_ec2nodeclass_* with no extra
// labels, and under the deprecated names as group karpenter.k8s.aws.
func TestEC2NodeClassConditionsAreReported(t *testing.T) {
	since := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(since.Add(2 * time.Minute))
	nc := awstest.NewNodeClass(nil)
	h.Create(t, nc)
	t.Cleanup(func() { _ = h.Env.Client.Delete(t.Context(), nc) })
	nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeReady, Status: metav1.ConditionFalse, Reason: "SubnetsNotReady",
		Message: "no subnets", LastTransitionTime: metav1.NewTime(since)}}
	h.UpdateStatus(t, nc)

	reg := registry(t, clk, metricsstatus.EC2NodeClasses())
	want := `
# HELP operator_ec2nodeclass_status_condition_current_status_seconds The current amount of time in seconds that a status condition has been in a specific state. Alarm := P99(Updated=Unknown) > 5 minutes
# TYPE operator_ec2nodeclass_status_condition_current_status_seconds gauge
operator_ec2nodeclass_status_condition_current_status_seconds{name="NAME",namespace="",reason="SubnetsNotReady",status="False",type="Ready"} 120
# HELP operator_status_condition_count The number of a condition for a given object, type and status. e.g. Alarm := Available=False > 0
# TYPE operator_status_condition_count gauge
operator_status_condition_count{group="karpenter.k8s.aws",kind="EC2NodeClass",name="NAME",namespace="",reason="SubnetsNotReady",status="False",type="Ready"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(strings.ReplaceAll(want, "NAME", nc.Name)),
		"operator_ec2nodeclass_status_condition_current_status_seconds", "operator_status_condition_count"); err != nil {
		t.Error(err)
	}
}

func keyOf(name string) client.ObjectKey { return client.ObjectKey{Name: name} }

func TestTerminatingObjectsReportTheirTerminationTime(t *testing.T) {
	h.Reset(t)
	ctx := t.Context()
	nc := test.MakeNodeClaim("going").NodePool("p").Finalizers(karpv1.TerminationFinalizer).Obj()
	h.Create(t, nc)
	nodeClaims := metricsstatus.NodeClaims([]string{karpv1.NodePoolLabelKey})
	clk := clocktesting.NewFakeClock(time.Now())
	if n := testutil.CollectAndCount(metricsstatus.NewCollector(h.Env.Client, clk, nodeClaims), "operator_nodeclaim_termination_current_time_seconds"); n != 0 {
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
	if err := testutil.GatherAndCompare(registry(t, clk, nodeClaims), strings.NewReader(want),
		"operator_nodeclaim_termination_current_time_seconds", "operator_termination_current_time_seconds"); err != nil {
		t.Error(err)
	}
	nc.Finalizers = nil
	if err := h.Env.Client.Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
}

// CapacityBuffers are reported under operator_capacitybuffer_* with the
// namespace, and under the deprecated names as group autoscaling.x-k8s.io,
// as upstream registers them with the CapacityBuffer gate on.
func TestCapacityBufferConditionsAreReported(t *testing.T) {
	since := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(since.Add(3 * time.Minute))
	cb := &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "warm"},
		Spec: autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "shape"}, Replicas: ptr.To[int32](2)}}
	h.Create(t, cb)
	t.Cleanup(func() { _ = h.Env.Client.Delete(t.Context(), cb) })
	cb.Status.Conditions = []metav1.Condition{{Type: autoscalingv1beta1.ConditionTypeReadyForProvisioning, Status: metav1.ConditionFalse,
		Reason: "PodTemplateNotFound", Message: "no template", LastTransitionTime: metav1.NewTime(since)}}
	h.UpdateStatus(t, cb)

	// Beside the core kinds: they share the deprecated series.
	nodeClaims, nodePools, nodes := kwokKinds()
	reg := registry(t, clk, nodeClaims, nodePools, nodes, metricsstatus.CapacityBuffers())
	want := `
# HELP operator_capacitybuffer_status_condition_current_status_seconds The current amount of time in seconds that a status condition has been in a specific state. Alarm := P99(Updated=Unknown) > 5 minutes
# TYPE operator_capacitybuffer_status_condition_current_status_seconds gauge
operator_capacitybuffer_status_condition_current_status_seconds{name="warm",namespace="default",reason="PodTemplateNotFound",status="False",type="ReadyForProvisioning"} 180
# HELP operator_status_condition_count The number of a condition for a given object, type and status. e.g. Alarm := Available=False > 0
# TYPE operator_status_condition_count gauge
operator_status_condition_count{group="autoscaling.x-k8s.io",kind="CapacityBuffer",name="warm",namespace="default",reason="PodTemplateNotFound",status="False",type="ReadyForProvisioning"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"operator_capacitybuffer_status_condition_current_status_seconds", "operator_status_condition_count"); err != nil {
		t.Error(err)
	}
}
