package registrationhealth_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodepool/registrationhealth"
	"github.com/karp-autoscaler/karp/pkg/state/nodepoolhealth"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

// reconciled reconciles the pool and returns it as stored.
func reconciled(t *testing.T, c *registrationhealth.Controller, name string) *karpv1.NodePool {
	t.Helper()
	if _, err := operatortest.Reconcile(t, h, c, name); err != nil {
		t.Fatal(err)
	}
	got := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	h.Get(t, got)
	return got
}

func healthy(pool *karpv1.NodePool) metav1.ConditionStatus { return condition(pool).Status }

func condition(pool *karpv1.NodePool) metav1.Condition {
	if cond := pool.StatusConditions().Get(karpv1.ConditionTypeNodeRegistrationHealthy); cond != nil {
		return *cond
	}
	return metav1.Condition{Status: "<missing>"}
}

// markHealthy stores NodeRegistrationHealthy=True for the pool's current
// generation, as the nodeclaim lifecycle does after a registration.
func markHealthy(t *testing.T, pool *karpv1.NodePool) {
	t.Helper()
	pool.StatusConditions().WithClock(h.Clock).SetTrue(karpv1.ConditionTypeNodeRegistrationHealthy)
	h.UpdateStatus(t, pool)
}

func TestResetsOnNodePoolAndNodeClassChanges(t *testing.T) {
	h.Reset(t)
	state := nodepoolhealth.NewState()
	c := registrationhealth.NewController(h.Client, fake.New(), h.Clock, state)
	nodeClass := test.MakeKWOKNodeClass("default").Obj()
	h.Create(t, nodeClass, test.MakeNodePool("pool").Obj())

	// 1. First sight: Unknown, and the NodeClass generation recorded.
	pool := reconciled(t, c, "pool")
	if got := healthy(pool); got != metav1.ConditionUnknown {
		t.Errorf("new pool: NodeRegistrationHealthy %s, want Unknown", got)
	}
	if pool.Status.NodeClassObservedGeneration != nodeClass.Generation || nodeClass.Generation == 0 {
		t.Errorf("nodeClassObservedGeneration = %d, want the NodeClass's %d", pool.Status.NodeClassObservedGeneration, nodeClass.Generation)
	}

	// 2. Nothing changed: the recorded outcomes are kept and the
	// condition follows them (two failures reach the threshold).
	markHealthy(t, pool)
	state.Record(pool.UID, pool.Name, nodepoolhealth.Outcome{Reason: "RegistrationFailed", Message: "Failed to register node"})
	state.Record(pool.UID, pool.Name, nodepoolhealth.Outcome{Reason: "RegistrationFailed", Message: "Failed to register node"})
	pool = reconciled(t, c, "pool")
	if got := condition(pool); got.Status != metav1.ConditionFalse || got.Reason != "RegistrationFailed" {
		t.Errorf("unchanged pool after two failures: NodeRegistrationHealthy %s/%s, want False/RegistrationFailed", got.Status, got.Reason)
	}
	if got := state.Status(pool.UID); got != nodepoolhealth.StatusUnhealthy {
		t.Errorf("unchanged pool: outcomes %s, want kept (Unhealthy)", got)
	}

	// 3. The NodeClass's spec changes: reset, new generation recorded.
	h.Get(t, nodeClass)
	nodeClass.Spec.NodeRegistrationDelay = &metav1.Duration{Duration: time.Second}
	if err := h.Env.Client.Update(t.Context(), nodeClass); err != nil {
		t.Fatal(err)
	}
	pool = reconciled(t, c, "pool")
	if got := healthy(pool); got != metav1.ConditionUnknown {
		t.Errorf("after a NodeClass change: NodeRegistrationHealthy %s, want Unknown", got)
	}
	if pool.Status.NodeClassObservedGeneration != nodeClass.Generation || nodeClass.Generation < 2 {
		t.Errorf("nodeClassObservedGeneration = %d, want the NodeClass's new %d", pool.Status.NodeClassObservedGeneration, nodeClass.Generation)
	}
	if got := state.Status(pool.UID); got != nodepoolhealth.StatusUnknown {
		t.Errorf("after a NodeClass change: outcomes %s, want forgotten", got)
	}

	// 4. The NodePool's spec changes: reset again.
	markHealthy(t, pool)
	state.Record(pool.UID, pool.Name, nodepoolhealth.Outcome{Success: true})
	pool.Spec.Weight = new(int32(10))
	if err := h.Env.Client.Update(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	pool = reconciled(t, c, "pool")
	if got := healthy(pool); got != metav1.ConditionUnknown {
		t.Errorf("after a NodePool change: NodeRegistrationHealthy %s, want Unknown", got)
	}
	if got := state.Status(pool.UID); got != nodepoolhealth.StatusUnknown {
		t.Errorf("after a NodePool change: outcomes %s, want forgotten", got)
	}
}

// A reconcile of a NodePool copy older than the controller's own reset
// (the cache has not seen that write yet) keeps the outcomes recorded
// since the reset: it neither forgets them nor writes Unknown over them.
func TestACopyOlderThanTheResetKeepsLaterOutcomes(t *testing.T) {
	h.Reset(t)
	state := nodepoolhealth.NewState()
	c := registrationhealth.NewController(h.Client, fake.New(), h.Clock, state)
	h.Create(t, test.MakeKWOKNodeClass("default").Obj(), test.MakeNodePool("pool").Obj())
	old := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "pool"}}
	h.Get(t, old)
	if got := reconciled(t, c, "pool"); healthy(got) != metav1.ConditionUnknown {
		t.Fatalf("new pool: NodeRegistrationHealthy %s, want Unknown", healthy(got))
	}
	state.Record(old.UID, old.Name, nodepoolhealth.Outcome{Reason: "RegistrationFailed", Message: "Failed to register node"})
	state.Record(old.UID, old.Name, nodepoolhealth.Outcome{Reason: "RegistrationFailed", Message: "Failed to register node"})
	if _, err := c.Reconcile(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	if got := state.Status(old.UID); got != nodepoolhealth.StatusUnhealthy {
		t.Errorf("outcomes after reconciling the older copy: %s, want Unhealthy kept", got)
	}
	after := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "pool"}}
	h.Get(t, after)
	if got := condition(after); got.Status != metav1.ConditionFalse || got.Reason != "RegistrationFailed" {
		t.Errorf("after reconciling the older copy: NodeRegistrationHealthy %s/%s, want False/RegistrationFailed", got.Status, got.Reason)
	}
}

func TestMissingNodeClassIsLeftAlone(t *testing.T) {
	h.Reset(t)
	c := registrationhealth.NewController(h.Client, fake.New(), h.Clock, nodepoolhealth.NewState())
	h.Create(t, test.MakeNodePool("orphan").Obj())
	pool := reconciled(t, c, "orphan")
	if got := healthy(pool); got != "<missing>" {
		t.Errorf("pool without its NodeClass: NodeRegistrationHealthy %s, want not set", got)
	}
}

// A reconcile acting on a NodePool that was deleted and created again
// under the same name meanwhile (a cache behind the API server) writes
// nothing to the new one: its status belongs to its own reconcile.
func TestStaleNodePoolWritesNothingToItsSuccessor(t *testing.T) {
	h.Reset(t)
	state := nodepoolhealth.NewState()
	c := registrationhealth.NewController(h.Client, fake.New(), h.Clock, state).WithAPIReader(h.APIReader)
	h.Create(t, test.MakeKWOKNodeClass("default").Obj(), test.MakeNodePool("pool").Obj())
	old := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "pool"}}
	h.Get(t, old)
	state.Record(old.UID, old.Name, nodepoolhealth.Outcome{Reason: "RegistrationFailed", Message: "Failed to register node"})
	state.Record(old.UID, old.Name, nodepoolhealth.Outcome{Reason: "RegistrationFailed", Message: "Failed to register node"})
	markHealthy(t, old)
	h.Get(t, old)

	if err := h.Env.Client.Delete(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	if !waitGone(t, "pool") {
		t.Fatal("the NodePool was not deleted")
	}
	h.Create(t, test.MakeNodePool("pool").Obj())
	before := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "pool"}}
	h.Get(t, before)
	if before.UID == old.UID {
		t.Fatal("the NodePool was not created again")
	}
	if _, err := c.Reconcile(t.Context(), old); err != nil {
		t.Fatalf("reconciling the deleted NodePool: %v", err)
	}
	after := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "pool"}}
	h.Get(t, after)
	if got, want := condition(after), condition(before); got.Status != want.Status || got.Reason != want.Reason {
		t.Errorf("the new NodePool's NodeRegistrationHealthy went from %s/%s to %s/%s, the old one's verdict",
			want.Status, want.Reason, got.Status, got.Reason)
	}
}

// waitGone waits until the NodePool is gone from the API server.
func waitGone(t *testing.T, name string) bool {
	t.Helper()
	for range 100 {
		if !h.Get(t, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}
