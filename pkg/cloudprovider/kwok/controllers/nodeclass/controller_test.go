package nodeclass_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/controllers/nodeclass"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

func ready(t *testing.T, c *nodeclass.Controller, name string) (metav1.Condition, int64) {
	t.Helper()
	if _, err := operatortest.Reconcile(t, h, c, name); err != nil {
		t.Fatal(err)
	}
	got := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	h.Get(t, got)
	cond := got.StatusConditions().Root()
	if cond == nil {
		t.Fatal("Ready not set")
	}
	return *cond, got.Generation
}

func TestReadyWhileTheNodeClassExists(t *testing.T) {
	h.Reset(t)
	c := nodeclass.NewController(h.Client, h.Clock)
	h.Create(t, test.MakeKWOKNodeClass("default").Obj())

	cond, generation := ready(t, c, "default")
	if cond.Status != metav1.ConditionTrue {
		t.Errorf("new NodeClass: Ready %s (%s), want True", cond.Status, cond.Reason)
	}
	if cond.ObservedGeneration != generation {
		t.Errorf("observedGeneration %d, want %d", cond.ObservedGeneration, generation)
	}

	// A spec change bumps the generation; Ready follows it.
	nc := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	h.Get(t, nc)
	nc.Spec.NodeRegistrationDelay = &metav1.Duration{Duration: 5e9}
	if err := h.Env.Client.Update(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	cond, generation = ready(t, c, "default")
	if generation < 2 || cond.ObservedGeneration != generation {
		t.Errorf("after a spec change: observedGeneration %d, generation %d", cond.ObservedGeneration, generation)
	}
}

func TestNotReadyWhileDeleting(t *testing.T) {
	h.Reset(t)
	c := nodeclass.NewController(h.Client, h.Clock)
	nc := test.MakeKWOKNodeClass("held").Obj()
	nc.Finalizers = []string{"example.com/hold"}
	h.Create(t, nc)
	if cond, _ := ready(t, c, "held"); cond.Status != metav1.ConditionTrue {
		t.Fatalf("before deletion: Ready %s, want True", cond.Status)
	}
	if err := h.Env.Client.Delete(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	cond, _ := ready(t, c, "held")
	if cond.Status != metav1.ConditionFalse || cond.Reason != nodeclass.ReasonTerminating {
		t.Errorf("deleting NodeClass: Ready %s/%s, want False/%s", cond.Status, cond.Reason, nodeclass.ReasonTerminating)
	}
	h.Get(t, nc)
	nc.Finalizers = nil
	if err := h.Env.Client.Update(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
}
