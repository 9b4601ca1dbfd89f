// Package operatortest runs karp controllers' reconcilers against a real
// API server for controller tests: a pkg/test/environment API server, a
// controller-runtime cache with karp's field indexes (what the controllers
// read in production), a fake clock and a real event recorder writing
// Events to the API server.
//
// Tests drive reconcilers directly (Reconcile) and assert on world state;
// Reconcile first waits until the cache has caught up with the API server,
// so a reconcile never acts on a view older than the test's last write.
package operatortest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	karpv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/v1alpha1"
	karpevents "github.com/karp-autoscaler/karp/pkg/events"
	"github.com/karp-autoscaler/karp/pkg/index"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

// Harness is a running API server plus a started cache.
type Harness struct {
	Env *environment.Environment
	// Client reads from the cache and writes to the API server, like the
	// manager's client in production.
	Client client.Client
	// APIReader reads straight from the API server.
	APIReader client.Reader
	Clock     *clocktesting.FakeClock
	Recorder  events.EventRecorder

	cancel context.CancelFunc
	done   chan error
}

// Start starts the API server and the cache. Call Stop at the end.
func Start(ctx context.Context) (*Harness, error) {
	env, err := environment.Start(ctx)
	if err != nil {
		return nil, err
	}
	mgr, err := manager.New(env.Config, manager.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("building manager: %w", err), env.Stop())
	}
	if err := index.Install(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	for _, obj := range watched() {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return nil, errors.Join(fmt.Errorf("starting informer: %w", err), env.Stop())
		}
	}
	// The recorder production uses (see pkg/operator).
	recorder := karpevents.NewRecorder(mgr.GetClient(), env.Scheme, clock.RealClock{}, log.FromContext(ctx).WithName("events"), "karpenter")
	if err := mgr.Add(recorder); err != nil {
		return nil, errors.Join(fmt.Errorf("adding the event recorder: %w", err), env.Stop())
	}
	runCtx, cancel := context.WithCancel(context.Background())
	h := &Harness{
		Env:       env,
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Clock:     clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)),
		Recorder:  recorder,
		cancel:    cancel,
		done:      make(chan error, 1),
	}
	go func() { h.done <- mgr.Start(runCtx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		return nil, errors.Join(errors.New("cache did not sync"), h.Stop())
	}
	return h, nil
}

func watched() []client.Object {
	return []client.Object{&karpv1.NodeClaim{}, &karpv1.NodePool{}, &corev1.Node{}, &corev1.Pod{}, &kwokv1alpha1.KWOKNodeClass{}, &karpv1alpha1.NodeOverlay{}}
}

// Stop stops the cache and the API server.
func (h *Harness) Stop() error {
	h.cancel()
	err := <-h.done
	return errors.Join(err, h.Env.Stop())
}

// Synced waits until the cache holds exactly the NodeClaims, NodePools,
// Nodes, KWOKNodeClasses and NodeOverlays the API server has, at the same versions.
func (h *Harness) Synced(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, list := range []func() client.ObjectList{
			func() client.ObjectList { return &karpv1.NodeClaimList{} },
			func() client.ObjectList { return &karpv1.NodePoolList{} },
			func() client.ObjectList { return &corev1.NodeList{} },
			func() client.ObjectList { return &kwokv1alpha1.KWOKNodeClassList{} },
			func() client.ObjectList { return &karpv1alpha1.NodeOverlayList{} },
		} {
			same, err := h.sameVersions(ctx, list)
			if err != nil || !same {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting for the cache to catch up: %v", err)
	}
}

func (h *Harness) sameVersions(ctx context.Context, newList func() client.ObjectList) (bool, error) {
	fromAPI, fromCache := newList(), newList()
	if err := h.APIReader.List(ctx, fromAPI); err != nil {
		return false, err
	}
	if err := h.Client.List(ctx, fromCache); err != nil {
		return false, err
	}
	return slices.Equal(versions(fromAPI), versions(fromCache)), nil
}

func versions(list client.ObjectList) []string {
	var out []string
	_ = forEach(list, func(o client.Object) { out = append(out, o.GetName()+"@"+o.GetResourceVersion()) })
	slices.Sort(out)
	return out
}

// Reconcile waits for the cache, then runs one reconcile of the named object.
func Reconcile[T client.Object](t testing.TB, h *Harness, r reconcile.ObjectReconciler[T], name string) (reconcile.Result, error) {
	t.Helper()
	h.Synced(t)
	return reconcile.AsReconciler[T](h.Client, r).Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
}

// Get reads the object's current state from the API server into obj; it
// reports false when it does not exist.
func (h *Harness) Get(t testing.TB, obj client.Object) bool {
	t.Helper()
	err := h.APIReader.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatalf("getting %s: %v", obj.GetName(), err)
	}
	return true
}

// Create creates objects, failing the test on error.
func (h *Harness) Create(t testing.TB, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := h.Env.Client.Create(context.Background(), obj); err != nil {
			t.Fatalf("creating %s: %v", obj.GetName(), err)
		}
	}
}

// Registered creates nc with status.providerID set to providerID, and a
// Node of the same name with that providerID: a NodeClaim whose instance
// launched and registered.
func (h *Harness) Registered(t testing.TB, nc *karpv1.NodeClaim, providerID string) {
	t.Helper()
	h.Create(t, nc)
	h.Get(t, nc)
	nc.Status.ProviderID = providerID
	h.UpdateStatus(t, nc)
	h.Create(t, test.MakeNode(nc.Name).ProviderID(providerID).Obj())
}

// NodeClaim returns the named NodeClaim as the API server has it, failing
// the test when it is gone.
func (h *Harness) NodeClaim(t testing.TB, name string) *karpv1.NodeClaim {
	t.Helper()
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if !h.Get(t, nc) {
		t.Fatalf("NodeClaim %s is gone", name)
	}
	return nc
}

// Deleting reports whether the named NodeClaim has been asked to go.
func (h *Harness) Deleting(t testing.TB, name string) bool {
	t.Helper()
	return !h.NodeClaim(t, name).DeletionTimestamp.IsZero()
}

// UpdateStatus writes obj's status, failing the test on error.
func (h *Harness) UpdateStatus(t testing.TB, obj client.Object) {
	t.Helper()
	if err := h.Env.Client.Status().Update(context.Background(), obj); err != nil {
		t.Fatalf("updating status of %s: %v", obj.GetName(), err)
	}
}

// EventReasons returns the reasons of Events about the named object.
func (h *Harness) EventReasons(t testing.TB, kind, name string) []string {
	t.Helper()
	var list eventsv1.EventList
	if err := h.Env.Client.List(context.Background(), &list); err != nil {
		t.Fatalf("listing events: %v", err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name {
			out = append(out, e.Reason)
		}
	}
	return out
}

// WaitForEvent waits until an Event with reason is recorded about the object.
func (h *Harness) WaitForEvent(t testing.TB, kind, name, reason string) {
	t.Helper()
	h.EventNote(t, kind, name, reason)
}

// EventNote waits until an Event with reason is recorded about the object
// and returns its note.
func (h *Harness) EventNote(t testing.TB, kind, name, reason string) string {
	t.Helper()
	var note string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var list eventsv1.EventList
		if err := h.Env.Client.List(ctx, &list); err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == reason {
				note = e.Note
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event about %s %s (have %v): %v", reason, kind, name, h.EventReasons(t, kind, name), err)
	}
	return note
}

// Reset deletes every NodeClaim, Node, NodePool, KWOKNodeClass and NodeOverlay,
// releasing finalizers, and waits until they are gone.
func (h *Harness) Reset(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	for _, newList := range []func() client.ObjectList{
		func() client.ObjectList { return &karpv1.NodeClaimList{} },
		func() client.ObjectList { return &corev1.NodeList{} },
		func() client.ObjectList { return &karpv1.NodePoolList{} },
		func() client.ObjectList { return &kwokv1alpha1.KWOKNodeClassList{} },
		func() client.ObjectList { return &karpv1alpha1.NodeOverlayList{} },
	} {
		list := newList()
		if err := h.Env.Client.List(ctx, list); err != nil {
			t.Fatalf("listing for reset: %v", err)
		}
		err := forEach(list, func(o client.Object) {
			if len(o.GetFinalizers()) > 0 {
				patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
				if err := h.Env.Client.Patch(ctx, o, patch); client.IgnoreNotFound(err) != nil {
					t.Fatalf("releasing %s: %v", o.GetName(), err)
				}
			}
			if err := h.Env.Client.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
				t.Fatalf("deleting %s: %v", o.GetName(), err)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	h.Synced(t)
}

// Main starts a Harness into *h, runs the package's tests, stops it and
// exits with the tests' status. Call it from TestMain:
//
//	var h *operatortest.Harness
//
//	func TestMain(m *testing.M) { operatortest.Main(m, &h) }
func Main(m *testing.M, h **Harness) {
	started, err := Start(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*h = started
	code := m.Run()
	if err := started.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}
