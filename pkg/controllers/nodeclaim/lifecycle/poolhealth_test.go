package lifecycle_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/lifecycle"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodepool/registrationhealth"
	"github.com/karp-autoscaler/karp/pkg/state/nodepoolhealth"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

// healthWriter is the NodePool's one writer of NodeRegistrationHealthy,
// sharing the lifecycle's State. It reconciles the new pool once, as it
// does when the pool is created, so the pool starts Unknown.
func healthWriter(t *testing.T, c *lifecycle.Controller, pool string) *registrationhealth.Controller {
	t.Helper()
	state := nodepoolhealth.NewState()
	c.WithRegistrationHealth(state)
	w := registrationhealth.NewController(h.Client, fake.New(), h.Clock, state)
	h.Create(t, test.MakeKWOKNodeClass("default").Obj(), test.MakeNodePool(pool).Obj())
	if got := registrationHealthy(t, w, pool); got.Status != metav1.ConditionUnknown {
		t.Fatalf("new pool: NodeRegistrationHealthy %s, want Unknown", got.Status)
	}
	return w
}

// registrationHealthy reconciles the writer (when given) and returns the
// pool's stored condition.
func registrationHealthy(t *testing.T, w *registrationhealth.Controller, pool string) metav1.Condition {
	t.Helper()
	if w != nil {
		if _, err := operatortest.Reconcile(t, h, w, pool); err != nil {
			t.Fatalf("reconciling the registration health of %s: %v", pool, err)
		}
	}
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}}
	if !h.Get(t, np) {
		t.Fatalf("nodepool %s does not exist", pool)
	}
	if cond := np.StatusConditions().Get(karpv1.ConditionTypeNodeRegistrationHealthy); cond != nil {
		return *cond
	}
	return metav1.Condition{Status: "<missing>"}
}

func TestNodeRegistrationHealthyFollowsRegistrations(t *testing.T) {
	_, c := setup(t)
	w := healthWriter(t, c, "default")

	// 1. Two launched NodeClaims never register: the first failure is a
	// quarter of the buffer, the second reaches the threshold.
	stuck := []*karpv1.NodeClaim{
		launched(t, c, test.MakeNodeClaim("stuck-1").NodePool("default").Obj()),
		launched(t, c, test.MakeNodeClaim("stuck-2").NodePool("default").Obj()),
	}
	h.Clock.Step(lifecycle.RegistrationTimeout + time.Second)
	mustReconcile(t, c, stuck[0].Name)
	if !deleting(t, stuck[0].Name) {
		t.Fatal("not deleted after the registration timeout")
	}
	if cond := registrationHealthy(t, w, "default"); cond.Status == metav1.ConditionFalse {
		t.Errorf("False after one failure: %+v", cond)
	}
	mustReconcile(t, c, stuck[1].Name)
	cond := registrationHealthy(t, w, "default")
	if cond.Status != metav1.ConditionFalse || cond.Reason != lifecycle.ReasonRegistrationFailed {
		t.Fatalf("after two registration timeouts: %s/%s, want False/%s", cond.Status, cond.Reason, lifecycle.ReasonRegistrationFailed)
	}

	// 2. Registrations: the buffer holds the last four outcomes, so the
	// pool is healthy again only once a single failure is left.
	for i := 1; i <= 3; i++ {
		nc := launched(t, c, test.MakeNodeClaim(fmt.Sprintf("joins-%d", i)).NodePool("default").Obj())
		nodeFor(t, nc, fmt.Sprintf("joins-%d-node", i))
		mustReconcile(t, c, nc.Name)
		if got := condition(getNodeClaim(t, nc.Name), karpv1.ConditionTypeRegistered); got.Status != metav1.ConditionTrue {
			t.Fatalf("%s not registered: %+v", nc.Name, got)
		}
		want := metav1.ConditionFalse
		if i == 3 {
			want = metav1.ConditionTrue
		}
		if cond := registrationHealthy(t, w, "default"); cond.Status != want {
			t.Errorf("after %d registrations: NodeRegistrationHealthy %s, want %s", i, cond.Status, want)
		}
	}
}

func TestLaunchTimeoutsCarryTheLaunchReason(t *testing.T) {
	cp, c := setup(t)
	w := healthWriter(t, c, "default")
	for _, name := range []string{"no-capacity-1", "no-capacity-2"} {
		nc := createNodeClaim(t, test.MakeNodeClaim(name).NodePool("default").Obj())
		cp.SetNextCreateError(errors.New("throttled"))
		if err := reconcileNodeClaim(t, c, nc.Name); err == nil {
			t.Fatal("a failed launch returned no error")
		}
		cp.SetNextCreateError(errors.New("still throttled"))
		h.Clock.Step(lifecycle.LaunchTimeout + time.Second)
		_ = reconcileNodeClaim(t, c, nc.Name)
		if !deleting(t, nc.Name) {
			t.Fatalf("%s not deleted after the launch timeout", nc.Name)
		}
	}
	cond := registrationHealthy(t, w, "default")
	if cond.Status != metav1.ConditionFalse || cond.Reason != lifecycle.ReasonLaunchFailed {
		t.Errorf("after two launch timeouts: %s/%s, want False/%s", cond.Status, cond.Reason, lifecycle.ReasonLaunchFailed)
	}
}

func TestWithoutRegistrationHealthThePoolIsUntouched(t *testing.T) {
	_, c := setup(t)
	h.Create(t, test.MakeNodePool("default").Obj())
	nc := launched(t, c, test.MakeNodeClaim("joins").NodePool("default").Obj())
	nodeFor(t, nc, "joins-node")
	mustReconcile(t, c, nc.Name)
	if cond := registrationHealthy(t, nil, "default"); cond.Status != "<missing>" {
		t.Errorf("NodeRegistrationHealthy set without a State: %+v", cond)
	}
}
