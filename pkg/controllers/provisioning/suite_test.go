package provisioning_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning"
	statecontrollers "github.com/karp-autoscaler/karp/pkg/controllers/state"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/controllertest"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

var env *environment.Environment

func TestMain(m *testing.M) { environment.Main(m, &env) }

// harness is one test's world (controllertest.Harness: a manager whose
// cache feeds a fresh cluster state, a fake provider, a fake clock) plus a
// provisioner driven directly by the test. The short fields alias the
// shared harness's.
type harness struct {
	base        *controllertest.Harness
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
	base := controllertest.New(t, env, statecontrollers.Register, fake.New())
	h := &harness{base: base, t: t, ctx: base.Ctx, client: base.Client, clock: base.Clock, provider: base.Provider}
	h.started()
	return h
}

// started picks up the base harness's (new) manager and state and builds
// a provisioner over them.
func (h *harness) started() {
	h.mgr, h.cluster = h.base.Manager, h.base.Cluster
	h.provisioner = provisioning.NewProvisioner(h.mgr.GetClient(), h.provider, h.cluster, h.base.Recorder,
		h.clock, provisioning.DefaultOptions())
}

// restart builds a second manager, state and provisioner over the same
// API, as a restarted controller would.
func (h *harness) restart() {
	h.base.Restart()
	h.started()
}

// eventually polls cond (real time) until it holds or fails the test.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	h.base.Eventually(what, cond)
}

// readyNodePool creates the NodePool and marks it Ready, as the NodePool
// controllers would.
func (h *harness) readyNodePool(np *karpv1.NodePool) *karpv1.NodePool {
	h.t.Helper()
	return h.base.ReadyNodePool(np)
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
			// Not merely awaiting the scheduler: marked unschedulable.
			if state.IsProvisionable(pod) {
				delete(want, pod.Name)
			}
		}
		return len(want) == 0
	})
	return pods
}

func (h *harness) create(obj client.Object) {
	h.t.Helper()
	h.base.Create(obj)
}

// schedule runs one provisioning pass once state is synced.
func (h *harness) schedule() *provisioning.Results {
	h.t.Helper()
	h.base.StateSynced()
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
	return h.base.EventNote(pod, reason)
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

func clientKeyOf(obj client.Object) client.ObjectKey { return client.ObjectKeyFromObject(obj) }

// readyNode creates an untainted node that no NodeClaim owns, with the
// given allocatable cpu and memory, and waits until state has its room.
func (h *harness) readyNode(name, cpu, memory string) *corev1.Node {
	h.t.Helper()
	node := test.MakeNode(name).ProviderID("fake://"+name).
		Capacity("cpu", cpu, "memory", memory, "pods", "20").Allocatable("cpu", cpu, "memory", memory, "pods", "20").Obj()
	h.create(node)
	node.Status = test.MakeNode(name).Capacity("cpu", cpu, "memory", memory, "pods", "20").
		Allocatable("cpu", cpu, "memory", memory, "pods", "20").Obj().Status
	if err := h.client.Status().Update(h.ctx, node); err != nil {
		h.t.Fatal(err)
	}
	node.Spec.Taints = nil
	if err := h.client.Update(h.ctx, node); err != nil {
		h.t.Fatal(err)
	}
	h.eventually("node allocatable in state", func() bool {
		for _, sn := range h.cluster.Nodes() {
			if sn.Node != nil && sn.Node.Name == name && len(sn.Allocatable()) > 0 && len(sn.Node.Spec.Taints) == 0 {
				return true
			}
		}
		return false
	})
	return node
}

// laggingGets is an interceptor Get that answers for the objects in
// served (by name, of the same kind) with those copies, as a cache that
// has not seen the later writes would; other reads go through. A test
// moves the cache on by changing served.
func laggingGets(served map[string]client.Object) func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
	return func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if copied, ok := served[key.Name]; ok && reflect.TypeOf(copied) == reflect.TypeOf(obj) {
			reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(copied.DeepCopyObject()).Elem())
			return nil
		}
		return c.Get(ctx, key, obj, opts...)
	}
}

// laggingClient is the manager's client behind a cache that serves the
// objects in served (see laggingGets), and the count of the status
// patches (scheduler hints) written through it.
func (h *harness) laggingClient(served map[string]client.Object) (client.Client, *int) {
	writes := new(int)
	return interceptor.NewClient(noWatch{h.mgr.GetClient()}, interceptor.Funcs{
		Get: laggingGets(served),
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			*writes++
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}), writes
}
