package provisioning_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning"
	statecontrollers "github.com/karp-autoscaler/karp/pkg/controllers/state"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

var env *environment.Environment

func TestMain(m *testing.M) {
	var err error
	env, err = environment.Start(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// harness is one test's world: a manager whose cache feeds a fresh cluster
// state through the real informer controllers, a fake provider, a fake
// clock, and a provisioner driven directly by the test.
type harness struct {
	t           *testing.T
	ctx         context.Context
	client      client.Client
	clock       *clocktesting.FakeClock
	provider    *fake.CloudProvider
	cluster     *state.Cluster
	provisioner *provisioning.Provisioner
	mgr         manager.Manager
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, ctx: ctx, client: env.Client, clock: clocktesting.NewFakeClock(time.Now()), provider: fake.New()}
	t.Cleanup(func() { h.cleanup(); cancel() })
	h.mgr = h.startManager(ctx)
	h.cluster = h.newState(ctx, h.mgr)
	h.provisioner = h.newProvisioner(h.cluster)
	return h
}

func (h *harness) startManager(ctx context.Context) manager.Manager {
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		// Every test (and every simulated restart) runs its own manager
		// with the same controller names.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		h.t.Fatalf("building manager: %v", err)
	}
	return mgr
}

// newState registers a fresh cluster state's informer controllers with a
// new manager (controller names must be unique per manager) and starts it.
func (h *harness) newState(ctx context.Context, mgr manager.Manager) *state.Cluster {
	cluster := state.NewCluster(h.clock, mgr.GetClient())
	if err := statecontrollers.Register(ctx, mgr, cluster); err != nil {
		h.t.Fatalf("registering state controllers: %v", err)
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			h.t.Errorf("manager stopped: %v", err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		h.t.Fatal("cache did not sync")
	}
	return cluster
}

func (h *harness) newProvisioner(cluster *state.Cluster) *provisioning.Provisioner {
	opts := provisioning.DefaultOptions()
	return provisioning.NewProvisioner(h.mgr.GetClient(), h.provider, cluster, h.mgr.GetEventRecorder("karp"), h.clock, opts)
}

// restart builds a second manager, state and provisioner over the same
// API, as a restarted controller would.
func (h *harness) restart() {
	ctx, cancel := context.WithCancel(h.ctx)
	h.t.Cleanup(cancel)
	h.mgr = h.startManager(ctx)
	h.cluster = h.newState(ctx, h.mgr)
	h.provisioner = h.newProvisioner(h.cluster)
}

func (h *harness) cleanup() {
	ctx := context.Background()
	grace := client.GracePeriodSeconds(0)
	for _, obj := range []client.Object{&corev1.Pod{}, &appsv1.DaemonSet{}, &corev1.LimitRange{}} {
		if err := env.Client.DeleteAllOf(ctx, obj, client.InNamespace("default"), grace); err != nil {
			h.t.Errorf("cleaning up %T: %v", obj, err)
		}
	}
	for _, obj := range []client.Object{&karpv1.NodeClaim{}, &karpv1.NodePool{}, &corev1.Node{}} {
		if err := env.Client.DeleteAllOf(ctx, obj); err != nil {
			h.t.Errorf("cleaning up %T: %v", obj, err)
		}
	}
	_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		var claims karpv1.NodeClaimList
		if err := env.Client.List(ctx, &pods); err != nil {
			return false, nil
		}
		if err := env.Client.List(ctx, &claims); err != nil {
			return false, nil
		}
		return len(pods.Items) == 0 && len(claims.Items) == 0, nil
	})
}

// eventually polls cond (real time) until it holds or fails the test.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	err := wait.PollUntilContextTimeout(h.ctx, 10*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		h.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// readyNodePool creates the NodePool and marks it Ready, as the NodePool
// controllers would.
func (h *harness) readyNodePool(np *karpv1.NodePool) *karpv1.NodePool {
	h.t.Helper()
	h.create(np)
	conds := np.StatusConditions()
	for _, c := range []string{karpv1.ConditionTypeValidationSucceeded, karpv1.ConditionTypeNodeClassReady} {
		conds.SetTrue(c)
	}
	if err := h.client.Status().Update(h.ctx, np); err != nil {
		h.t.Fatalf("marking NodePool %s ready: %v", np.Name, err)
	}
	h.eventually("NodePool in state", func() bool {
		for _, got := range h.cluster.NodePools() {
			if got.Name == np.Name && got.StatusConditions().IsTrue(karpv1.ConditionTypeReady) {
				return true
			}
		}
		return false
	})
	return np
}

// pendingPods creates the pods, marks them unschedulable as the
// kube-scheduler would, and waits until state sees them provisionable.
func (h *harness) pendingPods(pods ...*corev1.Pod) []*corev1.Pod {
	h.t.Helper()
	for _, pod := range pods {
		status := pod.Status
		h.create(pod)
		pod.Status = status
		if err := h.client.Status().Update(h.ctx, pod); err != nil {
			h.t.Fatalf("marking pod %s unschedulable: %v", pod.Name, err)
		}
	}
	h.eventually("pods provisionable in state", func() bool {
		want := map[string]bool{}
		for _, pod := range pods {
			want[pod.Name] = true
		}
		for _, pod := range h.cluster.ProvisionablePods() {
			delete(want, pod.Name)
		}
		return len(want) == 0
	})
	return pods
}

func (h *harness) create(obj client.Object) {
	h.t.Helper()
	if err := h.client.Create(h.ctx, obj); err != nil {
		h.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// schedule runs one provisioning pass once state is synced.
func (h *harness) schedule() *provisioning.Results {
	h.t.Helper()
	h.eventually("state synced", func() bool {
		ok, err := h.cluster.Synced(h.ctx)
		return err == nil && ok
	})
	res, err := h.provisioner.Schedule(h.ctx)
	if err != nil {
		h.t.Fatalf("provisioning: %v", err)
	}
	// Let the cache catch up with what was created, so later steps of the
	// fake clock do not outrun the informers.
	h.eventually("created NodeClaims in the cache", func() bool {
		var list karpv1.NodeClaimList
		if err := h.mgr.GetClient().List(h.ctx, &list); err != nil {
			return false
		}
		names := map[string]bool{}
		for _, nc := range list.Items {
			names[nc.Name] = true
		}
		for _, name := range res.Created {
			if !names[name] {
				return false
			}
		}
		return true
	})
	return res
}

// nodeClaims lists the NodeClaims in the API.
func (h *harness) nodeClaims() []karpv1.NodeClaim {
	h.t.Helper()
	var list karpv1.NodeClaimList
	if err := h.client.List(h.ctx, &list); err != nil {
		h.t.Fatalf("listing NodeClaims: %v", err)
	}
	return list.Items
}

// eventFor waits for an event with the reason on the pod and returns its note.
func (h *harness) eventFor(pod *corev1.Pod, reason string) string {
	h.t.Helper()
	var note string
	h.eventually(reason+" event on "+pod.Name, func() bool {
		var list eventsv1.EventList
		if err := h.client.List(h.ctx, &list, client.InNamespace(pod.Namespace)); err != nil {
			return false
		}
		for _, e := range list.Items {
			if e.Regarding.Name == pod.Name && e.Regarding.UID == pod.UID && e.Reason == reason {
				note = e.Note
				return true
			}
		}
		return false
	})
	return note
}

// requirement returns the NodeClaim's requirement on key.
func requirement(nc karpv1.NodeClaim, key string) *karpv1.NodeSelectorRequirementWithMinValues {
	for i := range nc.Spec.Requirements {
		if nc.Spec.Requirements[i].Key == key {
			return &nc.Spec.Requirements[i]
		}
	}
	return nil
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func clientKey(name string) client.ObjectKey { return client.ObjectKey{Name: name} }
