package disruption_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	statecontrollers "github.com/karp-autoscaler/karp/pkg/controllers/state"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/controllertest"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

var env *environment.Environment

func TestMain(m *testing.M) { environment.Main(m, &env) }

const zone = "test-zone-1"

// Test instance types: on-demand only, so prices are the listed ones.
var (
	smallType = fake.NewInstanceType(fake.InstanceTypeOptions{Name: "small", Resources: test.ResourceList("cpu", "2", "memory", "4Gi", "pods", "10"),
		Offerings: []*cloudprovider.Offering{{Zone: zone, CapacityType: karpv1.CapacityTypeOnDemand, Price: 0.10, Available: true}}})
	largeType = fake.NewInstanceType(fake.InstanceTypeOptions{Name: "large", Resources: test.ResourceList("cpu", "8", "memory", "16Gi", "pods", "40"),
		Offerings: []*cloudprovider.Offering{{Zone: zone, CapacityType: karpv1.CapacityTypeOnDemand, Price: 1.00, Available: true}}})
)

// harness is one test's world (controllertest.Harness: a manager whose
// cache feeds a fresh cluster state, a fake provider, a fake clock) plus a
// disruption controller the test drives pass by pass. The short fields
// alias the shared harness's.
type harness struct {
	base       *controllertest.Harness
	t          *testing.T
	ctx        context.Context
	client     client.Client
	clock      *clocktesting.FakeClock
	provider   *fake.CloudProvider
	cluster    *state.Cluster
	controller *disruption.Controller
	mgr        manager.Manager
	opts       disruption.Options
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	base := controllertest.New(t, env, statecontrollers.Register, fake.New(smallType, largeType))
	h := &harness{base: base, t: t, ctx: base.Ctx, client: base.Client, clock: base.Clock, provider: base.Provider,
		opts: disruption.DefaultOptions()}
	h.started()
	return h
}

// started picks up the base harness's (new) manager and state and builds
// a controller over them, as a (re)started process would.
func (h *harness) started() {
	h.mgr, h.cluster = h.base.Manager, h.base.Cluster
	h.newController()
}

func (h *harness) newController() { h.newControllerOver(h.mgr.GetClient()) }

// newControllerOver builds the controller over kubeClient.
func (h *harness) newControllerOver(kubeClient client.Client) {
	h.controller = disruption.NewController(kubeClient, h.provider, h.cluster, h.base.Recorder,
		h.clock, h.opts, simulation.Options{PreferencePolicy: simulation.PreferencePolicyRespect, MinValuesPolicy: simulation.MinValuesPolicyStrict})
}

// intercepted wraps the manager's client with funcs (interceptor.NewClient).
func (h *harness) intercepted(funcs interceptor.Funcs) client.Client {
	return interceptor.NewClient(noWatch{h.mgr.GetClient()}, funcs)
}

// noWatch lets interceptor.NewClient wrap a client.Client.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not supported")
}

// replacedOnce builds the controller over a client that calls atCreate
// just before each NodeClaim it creates, readies the "default" pool, runs
// the node name (large, one pod) and decides; the node must get exactly
// one replacement. It returns what atCreate saw, one value per NodeClaim
// created.
func replacedOnce[T any](h *harness, name string, atCreate func() T) []T {
	h.t.Helper()
	var mu sync.Mutex
	var seen []T
	h.newControllerOver(h.intercepted(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*karpv1.NodeClaim); ok {
				v := atCreate()
				mu.Lock()
				seen = append(seen, v)
				mu.Unlock()
			}
			return c.Create(ctx, obj, opts...)
		},
	}))
	h.readyNodePool(test.MakeNodePool("default").Obj())
	h.runningNode(name, nodeOpts{it: largeType}, pod("p1", "1"))
	h.decide()
	if len(h.replacements(name)) != 1 {
		h.t.Fatalf("node not replaced (DisruptionBlocked = %+v)", h.blocked(name))
	}
	mu.Lock()
	defer mu.Unlock()
	return append([]T(nil), seen...)
}

// restart simulates a controller restart: a new manager, state and
// controller over the same API.
func (h *harness) restart() {
	h.base.Restart()
	h.started()
}

// eventually polls cond (real time) until it holds or fails the test.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	h.base.Eventually(what, cond)
}

func (h *harness) create(obj client.Object) {
	h.t.Helper()
	h.base.Create(obj)
}

// readyNodePool creates the NodePool and marks it Ready.
func (h *harness) readyNodePool(np *karpv1.NodePool) *karpv1.NodePool {
	h.t.Helper()
	return h.base.ReadyNodePool(np)
}

// nodeOpts customise a running node.
type nodeOpts struct {
	pool        string
	it          *cloudprovider.InstanceType
	annotations map[string]string
	conditions  []string // extra True NodeClaim conditions
	taints      []corev1.Taint
	finalizers  []string
	initialized time.Time
	// terminationGracePeriod, when set, is the NodeClaim's.
	terminationGracePeriod time.Duration
	// expireAfter, when set, is the NodeClaim's.
	expireAfter time.Duration
}

// runningNode creates an initialized NodeClaim and its Ready Node of the
// given type in zone test-zone-1 (on-demand), then the pods bound to it,
// and waits until the cluster state holds them, joined.
func (h *harness) runningNode(name string, o nodeOpts, pods ...*corev1.Pod) *karpv1.NodeClaim {
	h.t.Helper()
	if o.pool == "" {
		o.pool = "default"
	}
	if o.initialized.IsZero() {
		o.initialized = h.clock.Now().Add(-time.Hour)
	}
	labels := map[string]string{karpv1.NodePoolLabelKey: o.pool, corev1.LabelInstanceTypeStable: o.it.Name,
		corev1.LabelTopologyZone: zone, karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeOnDemand,
		corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux", corev1.LabelHostname: name}
	providerID := "fake://" + name
	ncw := test.MakeNodeClaim(name).Labels(labels).Annotations(o.annotations).Finalizers(o.finalizers...)
	if o.terminationGracePeriod > 0 {
		ncw.TerminationGracePeriod(o.terminationGracePeriod)
	}
	if o.expireAfter > 0 {
		ncw.ExpireAfter(karpv1.NillableDuration{Duration: &o.expireAfter})
	}
	nc := ncw.Obj()
	h.create(nc)
	nc.Status.ProviderID, nc.Status.NodeName = providerID, name
	nc.Status.Capacity, nc.Status.Allocatable = o.it.Capacity, o.it.Allocatable
	for _, c := range append([]string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized}, o.conditions...) {
		nc.StatusConditions().WithClock(clocktesting.NewFakePassiveClock(o.initialized)).SetTrue(c)
	}
	if err := h.client.Status().Update(h.ctx, nc); err != nil {
		h.t.Fatalf("updating nodeclaim status: %v", err)
	}
	node := test.MakeNode(name).Labels(labels).ProviderID(providerID).Obj()
	node.Annotations = o.annotations
	node.Spec.Taints = o.taints
	h.create(node)
	node.Status.Capacity, node.Status.Allocatable = o.it.Capacity, o.it.Allocatable
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if err := h.client.Status().Update(h.ctx, node); err != nil {
		h.t.Fatalf("updating node status: %v", err)
	}
	h.settleTaints(node, o.taints)
	for _, pod := range pods {
		h.bind(pod, name)
	}
	// Managed: the state joined the Node with its NodeClaim. A Node whose
	// NodeClaim the state has not seen yet is an unmanaged node, which
	// counts as Initialized and is no candidate: a pass that ran then
	// would see capacity karp does not manage instead of the node.
	h.eventually("node "+name+" in state", func() bool {
		for _, sn := range h.cluster.Nodes() {
			if sn.Name() == name && sn.Managed() && sn.Initialized() && len(sn.Pods) == len(pods) && podsStarted(sn.Pods) && sn.Node != nil && len(sn.Node.Status.Allocatable) > 0 && len(sn.Node.Spec.Taints) == len(o.taints) {
				return true
			}
		}
		return false
	})
	return nc
}

// podsStarted reports whether the state saw every pod's status update (its
// start time), not only its creation: a pass that ran in between would see
// pods that never started.
func podsStarted(pods []*corev1.Pod) bool {
	for _, p := range pods {
		if p.Status.StartTime == nil {
			return false
		}
	}
	return true
}

// bind creates a running pod on the node.
func (h *harness) bind(pod *corev1.Pod, node string) {
	h.t.Helper()
	pod.Spec.NodeName = node
	h.create(pod)
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &metav1.Time{Time: h.clock.Now().Add(-time.Hour)}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if err := h.client.Status().Update(h.ctx, pod); err != nil {
		h.t.Fatalf("updating pod status: %v", err)
	}
}

// pod is a workload pod owned by a ReplicaSet.
func pod(name, cpu string) *corev1.Pod {
	return test.MakePod(name).Namespace("default").Owner("ReplicaSet", "rs", "rs-uid").Requests("cpu", cpu).Obj()
}

// pass runs one disruption pass.
func (h *harness) pass() bool {
	h.t.Helper()
	acted, err := h.controller.Pass(h.ctx)
	if err != nil {
		h.t.Fatalf("disruption pass: %v", err)
	}
	return acted
}

// decide runs a pass, lets the validation delay pass, and runs another.
func (h *harness) decide() {
	h.t.Helper()
	h.pass()
	h.clock.Step(h.opts.ValidationDelay)
	h.pass()
}

func (h *harness) nodeClaim(name string) *karpv1.NodeClaim {
	nc := &karpv1.NodeClaim{}
	if err := h.client.Get(h.ctx, types.NamespacedName{Name: name}, nc); err != nil {
		return nil
	}
	return nc
}

// gone reports whether the NodeClaim was deleted.
func (h *harness) gone(name string) bool {
	nc := h.nodeClaim(name)
	return nc == nil || nc.DeletionTimestamp != nil
}

func (h *harness) tainted(name string) bool {
	node := &corev1.Node{}
	if err := h.client.Get(h.ctx, types.NamespacedName{Name: name}, node); err != nil {
		return false
	}
	for _, t := range node.Spec.Taints {
		if t.Key == karpv1.DisruptedTaintKey {
			return true
		}
	}
	return false
}

// blocked returns the DisruptionBlocked condition of the NodeClaim.
func (h *harness) blocked(name string) *metav1.Condition {
	nc := h.nodeClaim(name)
	if nc == nil {
		return nil
	}
	return nc.StatusConditions().Get(disruption.ConditionTypeDisruptionBlocked)
}

// replacements lists NodeClaims that are not among the given names.
func (h *harness) replacements(existing ...string) []karpv1.NodeClaim {
	var list karpv1.NodeClaimList
	if err := h.client.List(h.ctx, &list); err != nil {
		h.t.Fatalf("listing nodeclaims: %v", err)
	}
	known := map[string]bool{}
	for _, n := range existing {
		known[n] = true
	}
	var out []karpv1.NodeClaim
	for _, nc := range list.Items {
		if !known[nc.Name] {
			out = append(out, nc)
		}
	}
	return out
}

// launch marks a replacement NodeClaim launched with the instance type's
// capacity, not yet registered, as the lifecycle controller would, and
// waits until the cluster state counts that capacity.
func (h *harness) launch(nc *karpv1.NodeClaim, it *cloudprovider.InstanceType) {
	h.t.Helper()
	nc.Status.ProviderID = "fake://" + nc.Name
	nc.Status.Capacity, nc.Status.Allocatable = it.Capacity, it.Allocatable
	nc.StatusConditions().SetTrue(karpv1.ConditionTypeLaunched)
	if err := h.client.Status().Update(h.ctx, nc); err != nil {
		h.t.Fatalf("launching replacement: %v", err)
	}
	h.eventually("replacement launched in state", func() bool {
		for _, sn := range h.cluster.Nodes() {
			if sn.NodeClaim != nil && sn.NodeClaim.Name == nc.Name && len(sn.Allocatable()) > 0 {
				return true
			}
		}
		return false
	})
}

// initialize marks a replacement NodeClaim launched, registered and
// initialized, with a Node, as the lifecycle controller would.
func (h *harness) initialize(nc *karpv1.NodeClaim, it *cloudprovider.InstanceType) {
	h.t.Helper()
	labels := map[string]string{karpv1.NodePoolLabelKey: nc.Labels[karpv1.NodePoolLabelKey], corev1.LabelInstanceTypeStable: it.Name,
		corev1.LabelTopologyZone: zone, karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeOnDemand, corev1.LabelHostname: nc.Name}
	node := test.MakeNode(nc.Name).Labels(labels).ProviderID("fake://" + nc.Name).Obj()
	h.create(node)
	node.Status.Capacity, node.Status.Allocatable = it.Capacity, it.Allocatable
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if err := h.client.Status().Update(h.ctx, node); err != nil {
		h.t.Fatalf("updating node status: %v", err)
	}
	h.settleTaints(node, nil)
	nc.Status.ProviderID, nc.Status.NodeName = "fake://"+nc.Name, nc.Name
	for _, c := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized} {
		nc.StatusConditions().SetTrue(c)
	}
	if err := h.client.Status().Update(h.ctx, nc); err != nil {
		h.t.Fatalf("initializing replacement: %v", err)
	}
	h.eventually("replacement initialized in state", func() bool {
		for _, sn := range h.cluster.Nodes() {
			if sn.NodeClaim != nil && sn.NodeClaim.Name == nc.Name && sn.Initialized() {
				return true
			}
		}
		return false
	})
}

// pdb creates a PDB over app=<app> with the given allowed disruptions.
func (h *harness) pdb(name, app string, allowed int32) {
	h.t.Helper()
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}
	h.create(pdb)
	pdb.Status.DisruptionsAllowed = allowed
	if err := h.client.Status().Update(h.ctx, pdb); err != nil {
		h.t.Fatalf("updating pdb status: %v", err)
	}
	h.eventually("pdb in state", func() bool {
		for _, p := range h.cluster.PDBs() {
			if p.Name == name && p.Status.DisruptionsAllowed == allowed {
				return true
			}
		}
		return false
	})
}

// releaseFinalizers drops the finalizers of the named NodeClaims.
func (h *harness) releaseFinalizers(names ...string) {
	for _, n := range names {
		nc := h.nodeClaim(n)
		if nc == nil {
			continue
		}
		nc.Finalizers = nil
		if err := h.client.Update(h.ctx, nc); err != nil {
			h.t.Errorf("releasing finalizers of %s: %v", n, err)
		}
	}
}

// settleTaints sets the node's taints, dropping the not-ready taint the
// API server adds at creation (no node lifecycle controller runs here).
func (h *harness) settleTaints(node *corev1.Node, taints []corev1.Taint) {
	h.t.Helper()
	node.Spec.Taints = taints
	if err := h.client.Update(h.ctx, node); err != nil {
		h.t.Fatalf("setting node taints: %v", err)
	}
}
