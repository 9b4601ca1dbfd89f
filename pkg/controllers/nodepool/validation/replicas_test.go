package validation_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodepool/validation"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

// TestStaticNodePoolSaysItIsNotServed: karp does not launch static
// NodePools (spec.replicas) yet; such a NodePool carries a False
// ReplicasServed condition and a warning event saying so, instead of
// silently getting no nodes. A dynamic NodePool carries no such condition.
func TestStaticNodePoolSaysItIsNotServed(t *testing.T) {
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
	cond := got.StatusConditions().Get(validation.ConditionTypeReplicasServed)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != validation.ReasonStaticCapacityNotImplemented || cond.Message == "" {
		t.Fatalf("ReplicasServed = %+v, want False/%s with a message", cond, validation.ReasonStaticCapacityNotImplemented)
	}
	h.WaitForEvent(t, "NodePool", static.Name, validation.ReasonStaticCapacityNotImplemented)
	other := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: dynamic.Name}}
	h.Get(t, other)
	if c := other.StatusConditions().Get(validation.ConditionTypeReplicasServed); c != nil {
		t.Errorf("dynamic NodePool has ReplicasServed = %+v, want none", c)
	}
}
