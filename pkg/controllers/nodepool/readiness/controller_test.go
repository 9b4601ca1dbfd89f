package readiness_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodepool/readiness"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

func nodeClassReady(t *testing.T, c *readiness.Controller, pool string) metav1.Condition {
	t.Helper()
	if _, err := operatortest.Reconcile(t, h, c, pool); err != nil {
		t.Fatal(err)
	}
	got := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}}
	h.Get(t, got)
	cond := got.StatusConditions().Get(karpv1.ConditionTypeNodeClassReady)
	if cond == nil {
		t.Fatal("NodeClassReady not set")
	}
	return *cond
}

func TestNodeClassReadyFollowsTheNodeClass(t *testing.T) {
	h.Reset(t)
	c := readiness.NewController(h.Client, fake.New(), h.Clock)
	h.Create(t, test.MakeNodePool("pool").Obj())

	// 1. The NodeClass does not exist.
	cond := nodeClassReady(t, c, "pool")
	if cond.Status != metav1.ConditionFalse || cond.Reason != readiness.ReasonNodeClassNotFound {
		t.Errorf("missing NodeClass: %s/%s, want False/%s", cond.Status, cond.Reason, readiness.ReasonNodeClassNotFound)
	}
	// The message names the missing NodeClass (it used to say only
	// "NodeClass not found on cluster").
	if want := `NodeClass not found on cluster: KWOKNodeClass "default" (group karpenter.kwok.sh)`; cond.Message != want {
		t.Errorf("missing NodeClass message %q, want %q", cond.Message, want)
	}

	// 2. It exists and is Ready.
	nodeClass := test.MakeKWOKNodeClass("default").Obj()
	h.Create(t, nodeClass)
	nodeClass.Status = test.MakeKWOKNodeClass("default").Ready(true, h.Clock.Now()).Obj().Status
	h.UpdateStatus(t, nodeClass)
	if cond := nodeClassReady(t, c, "pool"); cond.Status != metav1.ConditionTrue {
		t.Errorf("ready NodeClass: %+v, want True", cond)
	}

	// 3. It stops being Ready.
	h.Get(t, nodeClass)
	nodeClass.Status = test.MakeKWOKNodeClass("default").Ready(false, h.Clock.Now()).Obj().Status
	h.UpdateStatus(t, nodeClass)
	if cond := nodeClassReady(t, c, "pool"); cond.Status != metav1.ConditionFalse || cond.Reason != readiness.ReasonNodeClassNotReady {
		t.Errorf("unready NodeClass: %s/%s, want False/%s", cond.Status, cond.Reason, readiness.ReasonNodeClassNotReady)
	}

	// 4. It is being deleted (a finalizer holds it).
	h.Get(t, nodeClass)
	nodeClass.Finalizers = []string{"example.com/hold"}
	if err := h.Env.Client.Update(t.Context(), nodeClass); err != nil {
		t.Fatal(err)
	}
	if err := h.Env.Client.Delete(t.Context(), nodeClass); err != nil {
		t.Fatal(err)
	}
	if cond := nodeClassReady(t, c, "pool"); cond.Status != metav1.ConditionFalse || cond.Reason != readiness.ReasonNodeClassTerminating {
		t.Errorf("terminating NodeClass: %s/%s, want False/%s", cond.Status, cond.Reason, readiness.ReasonNodeClassTerminating)
	}
}

func TestUnsupportedNodeClassKindIsNotFound(t *testing.T) {
	h.Reset(t)
	c := readiness.NewController(h.Client, fake.New(), h.Clock)
	pool := test.MakeNodePool("foreign").NodeClassRef(&karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}).Obj()
	h.Create(t, pool)
	h.Create(t, test.MakeKWOKNodeClass("default").Obj())
	cond := nodeClassReady(t, c, "foreign")
	if cond.Reason != readiness.ReasonNodeClassNotFound {
		t.Errorf("unsupported kind: %s/%s, want False/%s", cond.Status, cond.Reason, readiness.ReasonNodeClassNotFound)
	}
	// The message says the kind is not served, not that an object is
	// missing (one of that kind may well exist).
	want := "NodeClass not found on cluster: kind EC2NodeClass of group karpenter.k8s.aws is not served by the fake cloud provider, which serves KWOKNodeClass.karpenter.kwok.sh"
	if cond.Message != want {
		t.Errorf("unsupported kind message %q, want %q", cond.Message, want)
	}
}
