package health_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers/node/health"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

const toleration = 10 * time.Minute

func setup(t *testing.T) *health.Controller {
	t.Helper()
	h.Reset(t)
	cp := fake.New()
	cp.SetRepairPolicies(
		cloudprovider.RepairPolicy{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: toleration},
		cloudprovider.RepairPolicy{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, TolerationDuration: toleration},
	)
	return health.NewController(h.Client, cp, h.Clock, h.Recorder)
}

// managedNode creates a NodeClaim and its Node in pool "p", Ready or not
// since the fake clock's now.
func managedNode(t *testing.T, name string, ready corev1.ConditionStatus) {
	t.Helper()
	providerID := "fake:///" + name
	nc := test.MakeNodeClaim(name).NodePool("p").Finalizers(karpv1.TerminationFinalizer).Obj()
	h.Create(t, nc)
	h.Get(t, nc)
	nc.Status.ProviderID = providerID
	nc.Status.NodeName = name
	nc.Status.ImageID = "image-" + name
	h.UpdateStatus(t, nc)
	node := test.MakeNode(name).ProviderID(providerID).Label(karpv1.NodePoolLabelKey, "p").Obj()
	h.Create(t, node)
	h.Get(t, node)
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, LastTransitionTime: metav1.NewTime(h.Clock.Now())}}
	h.UpdateStatus(t, node)
}

func claim(t *testing.T, name string) *karpv1.NodeClaim {
	t.Helper()
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
	h.Get(t, nc)
	return nc
}

func TestNotReadyNodeIsRepairedAfterItsToleration(t *testing.T) {
	c := setup(t)
	managedNode(t, "sick", corev1.ConditionFalse)
	for i := range 9 {
		managedNode(t, fmt.Sprintf("ok-%d", i), corev1.ConditionTrue)
	}

	h.Clock.Step(toleration - time.Minute)
	res, err := operatortest.Reconcile(t, h, c, "sick")
	if err != nil {
		t.Fatal(err)
	}
	if !claim(t, "sick").DeletionTimestamp.IsZero() {
		t.Fatal("repaired before the toleration")
	}
	if res.RequeueAfter != time.Minute {
		t.Errorf("RequeueAfter = %s, want the minute left", res.RequeueAfter)
	}
	// Healthy nodes are never touched and need no requeue.
	if res, _ := operatortest.Reconcile(t, h, c, "ok-0"); res.RequeueAfter != 0 || !claim(t, "ok-0").DeletionTimestamp.IsZero() {
		t.Errorf("healthy node: requeue %s, deleting %v", res.RequeueAfter, !claim(t, "ok-0").DeletionTimestamp.IsZero())
	}

	repaired := health.UnhealthyDisruptedTotal.WithLabelValues(string(corev1.NodeReady), "p", "", "image-sick")
	before := testutil.ToFloat64(repaired)
	h.Clock.Step(time.Minute)
	if _, err := operatortest.Reconcile(t, h, c, "sick"); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(repaired) - before; got != 1 {
		t.Errorf("unhealthy_disrupted_total{condition=Ready,nodepool=p,image_id=image-sick} moved by %v, want 1", got)
	}
	got := claim(t, "sick")
	if got.DeletionTimestamp.IsZero() {
		t.Fatal("not repaired after the toleration")
	}
	want := h.Clock.Now().UTC().Format(time.RFC3339)
	if ts := got.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ts != want {
		t.Errorf("termination timestamp = %q, want now %q (no drain wait on a broken node)", ts, want)
	}
	h.WaitForEvent(t, "Node", "sick", health.ReasonNodeRepair)
}

func TestRepairIsBlockedAboveTwentyPercentUnhealthy(t *testing.T) {
	c := setup(t)
	// 2 of 5 unhealthy: 20% of 5 rounds up to 1, so repair is blocked.
	managedNode(t, "sick-0", corev1.ConditionUnknown)
	managedNode(t, "sick-1", corev1.ConditionFalse)
	for i := range 3 {
		managedNode(t, fmt.Sprintf("ok-%d", i), corev1.ConditionTrue)
	}
	h.Clock.Step(toleration)
	res, err := operatortest.Reconcile(t, h, c, "sick-0")
	if err != nil {
		t.Fatal(err)
	}
	if !claim(t, "sick-0").DeletionTimestamp.IsZero() {
		t.Fatal("repaired although 40% of the pool is unhealthy")
	}
	if res.RequeueAfter != health.BlockedRetry {
		t.Errorf("RequeueAfter = %s, want %s", res.RequeueAfter, health.BlockedRetry)
	}
	h.WaitForEvent(t, "Node", "sick-0", health.ReasonNodeRepairBlocked)

	// Five more healthy nodes: 2 of 10 is within 20%.
	for i := 3; i < 8; i++ {
		managedNode(t, fmt.Sprintf("ok-%d", i), corev1.ConditionTrue)
	}
	if _, err := operatortest.Reconcile(t, h, c, "sick-0"); err != nil {
		t.Fatal(err)
	}
	if claim(t, "sick-0").DeletionTimestamp.IsZero() {
		t.Fatal("not repaired once 20% allows it")
	}
}

func TestUnmanagedNodesAreLeftAlone(t *testing.T) {
	c := setup(t)
	node := test.MakeNode("foreign").ProviderID("other:///foreign").Obj()
	h.Create(t, node)
	h.Get(t, node)
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(h.Clock.Now())}}
	h.UpdateStatus(t, node)
	h.Clock.Step(time.Hour)
	if _, err := operatortest.Reconcile(t, h, c, "foreign"); err != nil {
		t.Fatal(err)
	}
	if !h.Get(t, node) || !node.DeletionTimestamp.IsZero() {
		t.Error("an unmanaged node was touched")
	}
	if slices.Contains(h.EventReasons(t, "Node", "foreign"), health.ReasonNodeRepair) {
		t.Error("repair event on an unmanaged node")
	}
}

func TestTolerationOverride(t *testing.T) {
	setup(t)
	// The fake provider's default policies tolerate NotReady for longer.
	c := health.NewController(h.Client, fake.New(), h.Clock, h.Recorder, health.WithToleration(30*time.Second))
	managedNode(t, "sick", corev1.ConditionFalse)
	for i := range 4 {
		managedNode(t, fmt.Sprintf("ok-%d", i), corev1.ConditionTrue)
	}
	h.Clock.Step(29 * time.Second)
	if res, err := operatortest.Reconcile(t, h, c, "sick"); err != nil || res.RequeueAfter != time.Second {
		t.Fatalf("at 29s: requeue %s, err %v; want 1s", res.RequeueAfter, err)
	}
	h.Clock.Step(time.Second)
	if _, err := operatortest.Reconcile(t, h, c, "sick"); err != nil {
		t.Fatal(err)
	}
	if claim(t, "sick").DeletionTimestamp.IsZero() {
		t.Error("not repaired after the overridden 30s toleration")
	}
}

// With --replace-first a repair marks the NodeClaim instead of deleting
// it: to be deleted within the repair lead (the 30 s floor here: no launch
// observed), drain deadline the same, reason unhealthy; a second
// reconcile changes nothing.
func TestRepairReplacesFirst(t *testing.T) {
	h.Reset(t)
	cp := fake.New()
	cp.SetRepairPolicies(cloudprovider.RepairPolicy{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: toleration})
	c := health.NewController(h.Client, cp, h.Clock, h.Recorder, health.WithReplaceFirst(true))
	managedNode(t, "sick", corev1.ConditionFalse)
	sick := claim(t, "sick")
	sick.StatusConditions().SetTrue(karpv1.ConditionTypeInitialized)
	h.UpdateStatus(t, sick)
	for i := range 9 {
		managedNode(t, fmt.Sprintf("ok-%d", i), corev1.ConditionTrue)
	}
	h.Clock.Step(toleration)
	want := h.Clock.Now().Add(30 * time.Second).UTC().Truncate(time.Second)
	for range 2 {
		if _, err := operatortest.Reconcile(t, h, c, "sick"); err != nil {
			t.Fatal(err)
		}
		h.Clock.Step(5 * time.Second)
	}
	nc := claim(t, "sick")
	if !nc.DeletionTimestamp.IsZero() {
		t.Fatal("deleted at once, want it marked for replacement first")
	}
	by, why, ok := nc.ReplaceBy()
	if !ok || why != "unhealthy" || !by.Equal(want) {
		t.Errorf("replace-by = %s (%q, valid %v), want %s (unhealthy), unchanged by the second reconcile", by, why, ok, want)
	}
	if got := nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; got != want.Format(time.RFC3339) {
		t.Errorf("termination deadline %q, want %s", got, want.Format(time.RFC3339))
	}
}
