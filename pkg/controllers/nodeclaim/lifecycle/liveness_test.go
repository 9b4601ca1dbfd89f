package lifecycle_test

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/lifecycle"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

func deleting(t *testing.T, name string) bool {
	t.Helper()
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
	return !h.Get(t, nc) || !nc.DeletionTimestamp.IsZero()
}

func TestLaunchTimeoutDeletesTheNodeClaim(t *testing.T) {
	cp, c := setup(t)
	nc := createNodeClaim(t, test.MakeNodeClaim("slow-launch").NodePool("default").Obj())

	cp.SetNextCreateError(errors.New("throttled"))
	h.Clock.Step(lifecycle.LaunchTimeout - time.Minute)
	// The failed launch is retried with backoff (capped at a minute, so
	// the deadline is checked again in time).
	if _, err := operatortest.Reconcile(t, h, c, nc.Name); err == nil {
		t.Error("a failed launch returned no error to retry on")
	}
	if deleting(t, nc.Name) {
		t.Fatal("deleted before the launch timeout")
	}

	cp.SetNextCreateError(errors.New("still throttled"))
	h.Clock.Step(time.Minute + time.Second)
	_, _ = operatortest.Reconcile(t, h, c, nc.Name)
	if !deleting(t, nc.Name) {
		t.Fatal("not deleted after the launch timeout")
	}
	h.WaitForEvent(t, "NodeClaim", nc.Name, lifecycle.ReasonLaunchTimeout)
}

func TestRegistrationTimeoutDeletesTheNodeClaim(t *testing.T) {
	_, c := setup(t)
	nc := launched(t, c, test.MakeNodeClaim("no-node").NodePool("default").Obj())

	h.Clock.Step(lifecycle.RegistrationTimeout - time.Minute)
	mustReconcile(t, c, nc.Name)
	if deleting(t, nc.Name) {
		t.Fatal("deleted before the registration timeout")
	}
	h.Clock.Step(time.Minute + time.Second)
	mustReconcile(t, c, nc.Name)
	if !deleting(t, nc.Name) {
		t.Fatal("not deleted after the registration timeout")
	}
	h.WaitForEvent(t, "NodeClaim", nc.Name, lifecycle.ReasonRegistrationTimeout)
}

func TestRegisteredNodeClaimsOutliveTheTimeouts(t *testing.T) {
	_, c := setup(t)
	nc := launched(t, c, test.MakeNodeClaim("joined").NodePool("default").Obj())
	nodeFor(t, nc, "joined-node")
	mustReconcile(t, c, nc.Name)
	h.Clock.Step(lifecycle.RegistrationTimeout + lifecycle.LaunchTimeout)
	mustReconcile(t, c, nc.Name)
	if deleting(t, nc.Name) {
		t.Fatal("a registered NodeClaim was deleted by liveness")
	}
}
