package controllertest

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	karpevents "github.com/karp-autoscaler/karp/pkg/events"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

// Namespace is where the tests put their namespaced objects; Harness
// cleans it up after each test.
const Namespace = "default"

// RegisterStateFunc registers the informer controllers that keep a
// cluster state up to date with the manager's cache (the suites pass
// pkg/controllers/state's Register).
type RegisterStateFunc func(ctx context.Context, mgr manager.Manager, cluster *state.Cluster) error

// Harness is one test's world: a manager whose cache feeds a fresh cluster
// state through the real informer controllers, a fake provider and a fake
// clock. The controller under test is built by the suite over Manager and
// Cluster, and rebuilt after Restart.
type Harness struct {
	T   *testing.T
	Ctx context.Context
	// Client reads and writes the API server directly (no cache).
	Client   client.Client
	Clock    *clocktesting.FakeClock
	Provider *fake.CloudProvider
	// Manager, Cluster and Recorder are replaced by Restart.
	Manager manager.Manager
	Cluster *state.Cluster
	// Recorder is the event recorder production uses (pkg/events), run by
	// Manager.
	Recorder *karpevents.Recorder

	env           *environment.Environment
	registerState RegisterStateFunc
}

// New starts a manager and a cluster state over env for the test; when the
// test ends the manager stops and every object the tests create is deleted.
// The fake clock starts at the current time.
func New(t *testing.T, env *environment.Environment, registerState RegisterStateFunc, provider *fake.CloudProvider) *Harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := &Harness{T: t, Ctx: ctx, Client: env.Client, Clock: clocktesting.NewFakeClock(time.Now()),
		Provider: provider, env: env, registerState: registerState}
	t.Cleanup(func() { h.cleanup(); cancel() })
	h.start(ctx)
	return h
}

// Restart builds a second manager and cluster state over the same API, as
// a restarted controller process would; the first ones keep running until
// the test ends.
func (h *Harness) Restart() {
	ctx, cancel := context.WithCancel(h.Ctx)
	h.T.Cleanup(cancel)
	h.start(ctx)
}

func (h *Harness) start(ctx context.Context) {
	h.T.Helper()
	mgr, err := manager.New(h.env.Config, manager.Options{Scheme: h.env.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		// Every test (and every simulated restart) runs its own manager
		// with the same controller names.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		h.T.Fatalf("building manager: %v", err)
	}
	cluster := state.NewCluster(h.Clock, mgr.GetClient())
	if err := h.registerState(ctx, mgr, cluster); err != nil {
		h.T.Fatalf("registering state controllers: %v", err)
	}
	recorder := karpevents.NewRecorder(mgr.GetClient(), h.env.Scheme, clock.RealClock{}, log.FromContext(ctx), "karpenter")
	if err := mgr.Add(recorder); err != nil {
		h.T.Fatalf("adding the event recorder: %v", err)
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			h.T.Errorf("manager stopped: %v", err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		h.T.Fatal("cache did not sync")
	}
	h.Manager, h.Cluster, h.Recorder = mgr, cluster, recorder
}

// namespaced are the kinds of namespaced objects the tests create.
func namespaced() []client.Object {
	return []client.Object{&corev1.Pod{}, &appsv1.DaemonSet{}, &corev1.LimitRange{}, &policyv1.PodDisruptionBudget{},
		&corev1.PersistentVolumeClaim{}}
}

// deleteAllOf is DeleteAllOf, tried up to three times a second apart: a
// collection delete of a thousand pods on an API server that shares two
// loaded cores can outlast the server's request timeout (the stream is
// reset), and the delete is safe to repeat.
func (h *Harness) deleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	var err error
	for attempt := range 3 {
		if attempt > 0 {
			time.Sleep(time.Second)
		}
		if err = h.Client.DeleteAllOf(ctx, obj, opts...); err == nil {
			return nil
		}
	}
	return err
}

// cleanup deletes what the test created and waits (up to ten seconds) for
// Pods, NodeClaims and Nodes to be gone. The termination finalizer karp
// puts on NodeClaims (at creation) and Nodes is lifted, since no
// termination controller runs here; other finalizers a test left are the
// next test's problem, as with a real API server.
func (h *Harness) cleanup() {
	ctx := context.Background()
	grace := client.GracePeriodSeconds(0)
	for _, obj := range namespaced() {
		if err := h.deleteAllOf(ctx, obj, client.InNamespace(Namespace), grace); err != nil {
			h.T.Errorf("cleaning up %T: %v", obj, err)
		}
	}
	for _, obj := range []client.Object{&karpv1.NodeClaim{}, &karpv1.NodePool{}, &corev1.Node{}} {
		if err := h.deleteAllOf(ctx, obj); err != nil {
			h.T.Errorf("cleaning up %T: %v", obj, err)
		}
	}
	h.releaseFinalizers(ctx)
	_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		var claims karpv1.NodeClaimList
		var nodes corev1.NodeList
		if h.Client.List(ctx, &pods) != nil || h.Client.List(ctx, &claims) != nil || h.Client.List(ctx, &nodes) != nil {
			return false, nil
		}
		return len(pods.Items) == 0 && len(claims.Items) == 0 && len(nodes.Items) == 0, nil
	})
}

// Eventually polls cond (real time) until it holds, or fails the test
// after fifteen seconds.
func (h *Harness) Eventually(what string, cond func() bool) {
	h.T.Helper()
	err := wait.PollUntilContextTimeout(h.Ctx, 10*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		h.T.Fatalf("waiting for %s: %v", what, err)
	}
}

// Create creates the object, failing the test on error.
func (h *Harness) Create(obj client.Object) {
	h.T.Helper()
	if err := h.Client.Create(h.Ctx, obj); err != nil {
		h.T.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// ReadyNodePool creates the NodePool, marks it Ready as the NodePool
// controllers would, and waits until the cluster state sees it Ready.
func (h *Harness) ReadyNodePool(np *karpv1.NodePool) *karpv1.NodePool {
	h.T.Helper()
	h.Create(np)
	conds := np.StatusConditions()
	for _, c := range []string{karpv1.ConditionTypeValidationSucceeded, karpv1.ConditionTypeNodeClassReady} {
		conds.SetTrue(c)
	}
	if err := h.Client.Status().Update(h.Ctx, np); err != nil {
		h.T.Fatalf("marking NodePool %s ready: %v", np.Name, err)
	}
	h.Eventually("NodePool in state", func() bool {
		for _, got := range h.Cluster.NodePools() {
			if got.Name == np.Name && got.StatusConditions().IsTrue(karpv1.ConditionTypeReady) {
				return true
			}
		}
		return false
	})
	return np
}

// StateSynced waits until the cluster state is synced with the API.
func (h *Harness) StateSynced() {
	h.T.Helper()
	h.Eventually("state synced", func() bool {
		ok, err := h.Cluster.Synced(h.Ctx)
		return err == nil && ok
	})
}

// EventNote waits for an Event with the reason about the object (matched
// by name and UID) and returns its note.
func (h *Harness) EventNote(obj client.Object, reason string) string {
	h.T.Helper()
	var note string
	h.Eventually(reason+" event on "+obj.GetName(), func() bool {
		note = ""
		for _, e := range h.Events(obj) {
			if e.Reason == reason {
				note = e.Note
				return true
			}
		}
		return false
	})
	return note
}

// Events lists the Events about the object (matched by name and UID).
func (h *Harness) Events(obj client.Object) []eventsv1.Event {
	h.T.Helper()
	var list eventsv1.EventList
	ns := obj.GetNamespace()
	if ns == "" {
		ns = Namespace // events about cluster-scoped objects go to default
	}
	if err := h.Client.List(h.Ctx, &list, client.InNamespace(ns)); err != nil {
		h.T.Fatalf("listing events: %v", err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == obj.GetName() && e.Regarding.UID == obj.GetUID() {
			out = append(out, e)
		}
	}
	return out
}

// releaseFinalizers removes karp's termination finalizer from the
// NodeClaims and Nodes being deleted.
func (h *Harness) releaseFinalizers(ctx context.Context) {
	var claims karpv1.NodeClaimList
	var nodes corev1.NodeList
	if h.Client.List(ctx, &claims) != nil || h.Client.List(ctx, &nodes) != nil {
		return
	}
	var objs []client.Object
	for i := range claims.Items {
		objs = append(objs, &claims.Items[i])
	}
	for i := range nodes.Items {
		objs = append(objs, &nodes.Items[i])
	}
	for _, obj := range objs {
		if obj.GetDeletionTimestamp().IsZero() || !controllerutil.ContainsFinalizer(obj, karpv1.TerminationFinalizer) {
			continue
		}
		base := obj.DeepCopyObject().(client.Object)
		controllerutil.RemoveFinalizer(obj, karpv1.TerminationFinalizer)
		_ = client.IgnoreNotFound(h.Client.Patch(ctx, obj, client.MergeFrom(base)))
	}
}
