package nodeoverlay_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	karpv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/v1alpha1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/overlay"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeoverlay"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// setup returns the decorated provider over a fake one with the types m1
// ($1) and c1 ($2), and the controller feeding it.
func setup(t *testing.T) (*overlay.CloudProvider, *nodeoverlay.Controller) {
	t.Helper()
	h.Reset(t)
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}
	offerings := func(price float64) []*cloudprovider.Offering {
		return []*cloudprovider.Offering{{Zone: "a", CapacityType: karpv1.CapacityTypeOnDemand, Price: price, Available: true}}
	}
	inner := fake.New(scheduling.NewInstanceType("m1", nil, res, res, offerings(1)), scheduling.NewInstanceType("c1", nil, res, res, offerings(2)))
	cp := overlay.Decorate(inner, h.Client)
	return cp, nodeoverlay.NewController(h.Client, inner, cp.Store(), h.Clock)
}

func reconcileOnce(t *testing.T, c *nodeoverlay.Controller) {
	t.Helper()
	h.Synced(t)
	if _, err := c.Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "nodeoverlays"}}); err != nil {
		t.Fatal(err)
	}
}

// validation returns the overlay's ValidationSucceeded condition and
// whether it is Ready.
func validation(t *testing.T, name string) (*metav1.Condition, bool) {
	t.Helper()
	no := &karpv1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if !h.Get(t, no) {
		t.Fatalf("nodeoverlay %s not found", name)
	}
	cond := no.StatusConditions().Get(karpv1alpha1.ConditionTypeValidationSucceeded)
	if cond != nil && cond.ObservedGeneration != no.Generation {
		t.Errorf("%s ValidationSucceeded observedGeneration %d, want %d", name, cond.ObservedGeneration, no.Generation)
	}
	return cond, no.StatusConditions().IsTrue(karpv1.ConditionTypeReady)
}

func expectCondition(t *testing.T, name string, want metav1.ConditionStatus, wantReason string) {
	t.Helper()
	cond, ready := validation(t, name)
	if cond == nil || cond.Status != want || (wantReason != "" && cond.Reason != wantReason) {
		t.Fatalf("%s ValidationSucceeded = %+v, want %s %s", name, cond, want, wantReason)
	}
	if ready != (want == metav1.ConditionTrue) {
		t.Errorf("%s Ready = %v with ValidationSucceeded %s", name, ready, want)
	}
	if want == metav1.ConditionFalse && cond.Message == "" {
		t.Errorf("%s ValidationSucceeded=False without a message", name)
	}
}

func price(t *testing.T, cp *overlay.CloudProvider, pool *karpv1.NodePool, instanceType string) float64 {
	t.Helper()
	its, err := cp.GetInstanceTypes(t.Context(), pool)
	if err != nil {
		t.Fatalf("instance types: %v", err)
	}
	for _, it := range its {
		if it.Name == instanceType {
			return it.Offerings[0].Price
		}
	}
	t.Fatalf("no instance type %s", instanceType)
	return 0
}

func TestValidOverlayIsReadyAndApplied(t *testing.T) {
	cp, c := setup(t)
	pool := test.MakeNodePool("default").Obj()
	h.Create(t, pool, test.MakeNodeOverlay("m1-up").Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m1").PriceAdjustment("+200%").Obj())
	h.Synced(t)
	if _, err := cp.GetInstanceTypes(t.Context(), pool); !cloudprovider.IsUnevaluatedNodePoolError(err) {
		t.Fatalf("before the controller ran: err = %v, want UnevaluatedNodePoolError", err)
	}
	reconcileOnce(t, c)
	expectCondition(t, "m1-up", metav1.ConditionTrue, "")
	if got := price(t, cp, pool, "m1"); got != 3 {
		t.Errorf("m1 price = %v, want 1 +200%%", got)
	}
	if got := price(t, cp, pool, "c1"); got != 2 {
		t.Errorf("c1 price = %v, want its own 2", got)
	}
}

func TestRuntimeInvalidOverlay(t *testing.T) {
	cp, c := setup(t)
	pool := test.MakeNodePool("default").Obj()
	// Exists with values passes the CRD's CEL rules; the runtime validation refuses it.
	h.Create(t, pool, test.MakeNodeOverlay("bad").Requirement("example.com/team", corev1.NodeSelectorOpExists, "x").Price("9").Obj())
	reconcileOnce(t, c)
	expectCondition(t, "bad", metav1.ConditionFalse, karpv1alpha1.ReasonRuntimeValidation)
	if got := price(t, cp, pool, "m1"); got != 1 {
		t.Errorf("m1 price = %v: an invalid overlay was applied", got)
	}
}

func TestConflictThenResolved(t *testing.T) {
	cp, c := setup(t)
	pool := test.MakeNodePool("default").Obj()
	h.Create(t, pool,
		test.MakeNodeOverlay("a").Price("5").Weight(10).Obj(),
		test.MakeNodeOverlay("b").Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m1").Price("7").Weight(10).Obj())
	reconcileOnce(t, c)
	// Same weight on m1: b (the name that sorts last) applies, a conflicts
	// and is not applied anywhere (c1 keeps its price).
	expectCondition(t, "b", metav1.ConditionTrue, "")
	expectCondition(t, "a", metav1.ConditionFalse, karpv1alpha1.ReasonConflict)
	if cond, _ := validation(t, "a"); !strings.Contains(cond.Message, "b") {
		t.Errorf("conflict message %q does not name b", cond.Message)
	}
	if m1, c1 := price(t, cp, pool, "m1"), price(t, cp, pool, "c1"); m1 != 7 || c1 != 2 {
		t.Errorf("prices m1=%v c1=%v, want 7 and 2", m1, c1)
	}

	// a's weight raised: no conflict; a now wins both types.
	a := &karpv1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	h.Get(t, a)
	patched := a.DeepCopy()
	w := int32(20)
	patched.Spec.Weight = &w
	if err := h.Env.Client.Patch(t.Context(), patched, client.MergeFrom(a)); err != nil {
		t.Fatal(err)
	}
	h.Synced(t)
	if _, err := cp.GetInstanceTypes(t.Context(), pool); !cloudprovider.IsUnevaluatedNodePoolError(err) {
		t.Fatalf("after the change, before the controller ran: err = %v, want UnevaluatedNodePoolError", err)
	}
	reconcileOnce(t, c)
	expectCondition(t, "a", metav1.ConditionTrue, "")
	expectCondition(t, "b", metav1.ConditionTrue, "")
	if m1, c1 := price(t, cp, pool, "m1"), price(t, cp, pool, "c1"); m1 != 5 || c1 != 5 {
		t.Errorf("prices m1=%v c1=%v, want a's 5 for both", m1, c1)
	}
}

func TestCapacityOverlay(t *testing.T) {
	cp, c := setup(t)
	pool := test.MakeNodePool("default").Obj()
	h.Create(t, pool, test.MakeNodeOverlay("widgets").Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c1").
		Capacity(corev1.ResourceList{"example.com/widget": resource.MustParse("4")}).Obj())
	reconcileOnce(t, c)
	expectCondition(t, "widgets", metav1.ConditionTrue, "")
	its, err := cp.GetInstanceTypes(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		q, ok := it.Allocatable["example.com/widget"]
		if want := it.Name == "c1"; ok != want || (ok && q.Value() != 4) {
			t.Errorf("%s allocatable widgets = %v (set %v), want 4 on c1 only", it.Name, q.String(), ok)
		}
	}
}

func TestNewNodePoolWaitsForTheController(t *testing.T) {
	cp, c := setup(t)
	h.Create(t, test.MakeNodePool("default").Obj())
	reconcileOnce(t, c)
	late := test.MakeNodePool("late").Obj()
	h.Create(t, late)
	h.Synced(t)
	if _, err := cp.GetInstanceTypes(t.Context(), late); !cloudprovider.IsUnevaluatedNodePoolError(err) {
		t.Fatalf("new nodepool: err = %v, want UnevaluatedNodePoolError", err)
	}
	reconcileOnce(t, c)
	if got := price(t, cp, late, "m1"); got != 1 {
		t.Errorf("m1 price = %v, want 1", got)
	}
}
