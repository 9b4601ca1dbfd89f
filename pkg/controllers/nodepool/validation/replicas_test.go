package validation_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodepool/validation"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

// TestStaticNodePoolSaysTheGateIsOff: with the StaticCapacity feature
// gate off (upstream's default), a static NodePool (spec.replicas) gets no
// nodes; it carries a False ReplicasServed condition and a warning event
// saying so, instead of silently getting none. A dynamic NodePool carries
// no such condition.
func TestStaticNodePoolSaysTheGateIsOff(t *testing.T) {
	h.Reset(t)
	c := validation.NewController(h.Client, h.Clock).WithRecorder(h.Recorder)
	static := test.MakeNodePool("static").Replicas(3).Obj()
	dynamic := test.MakeNodePool("dynamic").Obj()
	h.Create(t, static)
	h.Create(t, dynamic)
	for _, name := range []string{static.Name, dynamic.Name} {
		if _, err := operatortest.Reconcile(t, h, c, name); err != nil {
			t.Fatal(err)
		}
	}
	got := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: static.Name}}
	h.Get(t, got)
	cond := got.StatusConditions().Get(karpv1.ConditionTypeReplicasServed)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != validation.ReasonStaticCapacityDisabled || cond.Message == "" {
		t.Fatalf("ReplicasServed = %+v, want False/%s with a message", cond, validation.ReasonStaticCapacityDisabled)
	}
	h.WaitForEvent(t, "NodePool", static.Name, validation.ReasonStaticCapacityDisabled)
	other := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: dynamic.Name}}
	h.Get(t, other)
	if c := other.StatusConditions().Get(karpv1.ConditionTypeReplicasServed); c != nil {
		t.Errorf("dynamic NodePool has ReplicasServed = %+v, want none", c)
	}
}

// TestStaticNodePoolIsLeftToTheStaticController: with the gate on, the
// validation controller does not set ReplicasServed on a static NodePool:
// the static controller owns the condition.
func TestStaticNodePoolIsLeftToTheStaticController(t *testing.T) {
	h.Reset(t)
	c := validation.NewController(h.Client, h.Clock).WithRecorder(h.Recorder).WithStaticCapacity(true)
	static := test.MakeNodePool("static").Replicas(3).Obj()
	h.Create(t, static)
	if _, err := operatortest.Reconcile(t, h, c, static.Name); err != nil {
		t.Fatal(err)
	}
	got := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: static.Name}}
	h.Get(t, got)
	if !got.StatusConditions().IsTrue(karpv1.ConditionTypeValidationSucceeded) {
		t.Fatalf("ValidationSucceeded is not True: %+v", got.Status.Conditions)
	}
	if cond := got.StatusConditions().Get(karpv1.ConditionTypeReplicasServed); cond != nil {
		t.Errorf("ReplicasServed = %+v, want it left to the static controller", cond)
	}
}
