package registrationhealth_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/lifecycle"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodepool/registrationhealth"
	"github.com/karp-autoscaler/karp/pkg/index"
	"github.com/karp-autoscaler/karp/pkg/state/nodepoolhealth"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

// statusWrites counts the status writes (patch, update, apply) a client
// makes to NodePools.
type statusWrites struct {
	client.Client
	mu sync.Mutex
	n  int
}

func (c *statusWrites) Status() client.SubResourceWriter {
	return &countingStatus{SubResourceWriter: c.Client.Status(), c: c}
}

func (c *statusWrites) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *statusWrites) add(isNodePool bool) {
	if !isNodePool {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
}

type countingStatus struct {
	client.SubResourceWriter
	c *statusWrites
}

func (s *countingStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	_, isNodePool := obj.(*karpv1.NodePool)
	s.c.add(isNodePool)
	return s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

func (s *countingStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	_, isNodePool := obj.(*karpv1.NodePool)
	s.c.add(isNodePool)
	return s.SubResourceWriter.Update(ctx, obj, opts...)
}

func (s *countingStatus) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	// Every apply of this test's controllers is a NodePool's.
	s.c.add(true)
	return s.SubResourceWriter.Apply(ctx, obj, opts...)
}

// launchedClaims creates n NodeClaims of the pool and reconciles each
// once with the lifecycle, returning them launched.
func launchedClaims(t *testing.T, lc *lifecycle.Controller, pool, prefix string, n int) []*karpv1.NodeClaim {
	t.Helper()
	var out []*karpv1.NodeClaim
	for i := range n {
		nc := test.MakeNodeClaim(fmt.Sprintf("%s-%d", prefix, i)).NodePool(pool).Obj()
		h.Create(t, nc)
		h.Clock.SetTime(nc.CreationTimestamp.Time)
		if _, err := operatortest.Reconcile(t, h, lc, nc.Name); err != nil {
			t.Fatalf("launching %s: %v", nc.Name, err)
		}
		h.Get(t, nc)
		if !nc.StatusConditions().IsTrue(karpv1.ConditionTypeLaunched) {
			t.Fatalf("%s not launched", nc.Name)
		}
		out = append(out, nc)
	}
	return out
}

// joinNode creates the kubelet's Node for a launched NodeClaim.
func joinNode(t *testing.T, nc *karpv1.NodeClaim) {
	t.Helper()
	node := test.MakeNode(nc.Name + "-node").ProviderID(nc.Status.ProviderID).Taint(karpv1.UnregisteredNoExecuteTaint).Obj()
	node.Status.Capacity = nc.Status.Capacity.DeepCopy()
	node.Status.Allocatable = nc.Status.Allocatable.DeepCopy()
	h.Create(t, node)
	// No kube-controller-manager lifts the admission's not-ready taint.
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
	if err := h.Env.Client.Update(t.Context(), node); err != nil {
		t.Fatalf("lifting the not-ready taint: %v", err)
	}
}

// reconcileAll reconciles the NodeClaims with the lifecycle at once, as
// its workers do in a scale-out, and fails on any error.
func reconcileAll(t *testing.T, lc *lifecycle.Controller, claims []*karpv1.NodeClaim) {
	t.Helper()
	h.Synced(t)
	r := reconcile.AsReconciler(h.Client, lc)
	errs := make([]error, len(claims))
	var wg sync.WaitGroup
	for i, nc := range claims {
		wg.Go(func() {
			_, errs[i] = r.Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("reconciling %s: %v", claims[i].Name, err)
		}
	}
}

// TestConcurrentOutcomesOneWriter drives NodeClaims of one NodePool through
// liveness failures and then registrations, all at once, and checks that
// the lifecycle never writes the NodePool, that every outcome reaches the
// State (the writer is told of each), and that the one writer needs one
// status write per condition change, however many NodeClaims there are.
func TestConcurrentOutcomesOneWriter(t *testing.T) {
	const failing, registering = 3, 12
	h.Reset(t)
	writes := &statusWrites{Client: h.Client}
	cp := fake.New()
	state := nodepoolhealth.NewState()
	var mu sync.Mutex
	told := map[string]int{}
	// What the controller's watch does, counted: one enqueue per outcome.
	state.OnChange(func(name string) {
		mu.Lock()
		defer mu.Unlock()
		told[name]++
	})
	lc := lifecycle.NewController(writes, cp, h.Clock, h.Recorder).WithRegistrationHealth(state)
	rh := registrationhealth.NewController(writes, cp, h.Clock, state)
	h.Create(t, test.MakeKWOKNodeClass("default").Obj(), test.MakeNodePool("pool").Obj())

	// 1. The new pool: Unknown, one write.
	pool := reconciled(t, rh, "pool")
	if got := condition(pool); got.Status != metav1.ConditionUnknown {
		t.Fatalf("new pool: %s, want Unknown", got.Status)
	}
	if got := writes.count(); got != 1 {
		t.Fatalf("new pool: %d NodePool status writes, want 1", got)
	}

	// 2. Launched NodeClaims pass the registration timeout together.
	stuck := launchedClaims(t, lc, "pool", "stuck", failing)
	h.Clock.Step(lifecycle.RegistrationTimeout + time.Second)
	reconcileAll(t, lc, stuck)
	if got := writes.count(); got != 1 {
		t.Errorf("after %d liveness failures: %d NodePool status writes, want still 1 (the lifecycle writes none)", failing, got)
	}
	pool = reconciled(t, rh, "pool")
	if got := condition(pool); got.Status != metav1.ConditionFalse || got.Reason != lifecycle.ReasonRegistrationFailed {
		t.Errorf("after %d registration timeouts: %s/%s, want False/%s", failing, got.Status, got.Reason, lifecycle.ReasonRegistrationFailed)
	}

	// 3. Many NodeClaims register at once.
	claims := launchedClaims(t, lc, "pool", "joins", registering)
	for _, nc := range claims {
		joinNode(t, nc)
	}
	reconcileAll(t, lc, claims)
	for _, nc := range claims {
		h.Get(t, nc)
		if !nc.StatusConditions().IsTrue(karpv1.ConditionTypeRegistered) {
			t.Fatalf("%s not registered", nc.Name)
		}
	}
	if got := writes.count(); got != 2 {
		t.Errorf("after %d registrations: %d NodePool status writes, want still 2 (the lifecycle writes none)", registering, got)
	}
	// Every outcome was recorded: the last four are registrations, and
	// the writer was told of each outcome.
	if got := state.Status(pool.UID); got != nodepoolhealth.StatusHealthy {
		t.Errorf("outcomes after the registrations: %s, want Healthy", got)
	}
	mu.Lock()
	if got := told["pool"]; got != failing+registering {
		t.Errorf("writer told %d times, want once per outcome (%d)", got, failing+registering)
	}
	mu.Unlock()
	pool = reconciled(t, rh, "pool")
	if got := condition(pool); got.Status != metav1.ConditionTrue {
		t.Errorf("after %d registrations: %s, want True", registering, got.Status)
	}

	// 4. The writes are bounded by the condition's changes (Unknown,
	// False, True), not by the NodeClaims; another pass writes nothing.
	reconciled(t, rh, "pool")
	if got := writes.count(); got != 3 {
		t.Errorf("%d NodePool status writes for %d NodeClaims, want 3 (one per condition change)", got, failing+registering)
	}
}

// TestApplyKeepsOtherConditions checks that the writer's server-side
// apply leaves the conditions other controllers own alone, and that a
// restarted process (an empty State) goes on from the stored condition.
func TestApplyKeepsOtherConditions(t *testing.T) {
	h.Reset(t)
	cp := fake.New()
	h.Create(t, test.MakeKWOKNodeClass("default").Obj(), test.MakeNodePool("pool").Obj())
	reconciled(t, registrationhealth.NewController(h.Client, cp, h.Clock, nodepoolhealth.NewState()), "pool")

	// Another controller's condition, written with a merge patch.
	pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "pool"}}
	h.Get(t, pool)
	pool.StatusConditions().WithClock(h.Clock).SetTrue(karpv1.ConditionTypeValidationSucceeded)
	h.UpdateStatus(t, pool)

	// 2. A restart: the State is empty and seeds from the stored
	// Unknown; two failures make the pool False.
	state := nodepoolhealth.NewState()
	rh := registrationhealth.NewController(h.Client, cp, h.Clock, state)
	reconciled(t, rh, "pool")
	state.Record(pool.UID, "pool", nodepoolhealth.Outcome{Reason: "InsufficientCapacity", Message: "no capacity"})
	state.Record(pool.UID, "pool", nodepoolhealth.Outcome{Reason: "InsufficientCapacity", Message: "no capacity"})
	pool = reconciled(t, rh, "pool")
	if got := condition(pool); got.Status != metav1.ConditionFalse || got.Reason != "InsufficientCapacity" {
		t.Errorf("after two launch failures: %s/%s, want False/InsufficientCapacity", got.Status, got.Reason)
	}
	if !pool.StatusConditions().IsTrue(karpv1.ConditionTypeValidationSucceeded) {
		t.Errorf("the apply dropped another controller's condition: %+v", pool.Status.Conditions)
	}

	// 3. Another restart: the stored False holds against one success.
	state = nodepoolhealth.NewState()
	rh = registrationhealth.NewController(h.Client, cp, h.Clock, state)
	reconciled(t, rh, "pool")
	state.Record(pool.UID, "pool", nodepoolhealth.Outcome{Success: true})
	pool = reconciled(t, rh, "pool")
	if got := condition(pool); got.Status != metav1.ConditionFalse || got.Reason != "InsufficientCapacity" {
		t.Errorf("one registration after a restart: %s/%s, want False/InsufficientCapacity kept", got.Status, got.Reason)
	}
}

// TestRecordedOutcomesReachTheNodePool runs the controller in a manager:
// outcomes recorded in the State, with no NodePool event, reach the
// NodePool's condition through the controller's watch of the State.
func TestRecordedOutcomesReachTheNodePool(t *testing.T) {
	h.Reset(t)
	mgr, err := manager.New(h.Env.Config, manager.Options{
		Scheme:                 h.Env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := index.Install(t.Context(), mgr.GetFieldIndexer()); err != nil {
		t.Fatal(err)
	}
	state := nodepoolhealth.NewState()
	if err := registrationhealth.NewController(mgr.GetClient(), fake.New(), h.Clock, state).Register(t.Context(), mgr); err != nil {
		t.Fatal(err)
	}
	h.Create(t, test.MakeKWOKNodeClass("default").Obj(), test.MakeNodePool("pool").Obj())
	operatortest.StartUntilCleanup(t, mgr)
	pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "pool"}}
	waitFor := func(want metav1.ConditionStatus) {
		t.Helper()
		err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			h.Get(t, pool)
			return condition(pool).Status == want, nil
		})
		if err != nil {
			t.Fatalf("NodeRegistrationHealthy stayed %s, want %s", condition(pool).Status, want)
		}
	}
	waitFor(metav1.ConditionUnknown)
	for range 2 {
		state.Record(pool.UID, "pool", nodepoolhealth.Outcome{Reason: lifecycle.ReasonRegistrationFailed, Message: "Failed to register node"})
	}
	waitFor(metav1.ConditionFalse)
	for range 3 {
		state.Record(pool.UID, "pool", nodepoolhealth.Outcome{Success: true})
	}
	waitFor(metav1.ConditionTrue)
}
