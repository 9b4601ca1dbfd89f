package provisioning_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning"
	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning/batchhold"
	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning/hint"
	statecontrollers "github.com/karp-autoscaler/karp/pkg/controllers/state"
	"github.com/karp-autoscaler/karp/pkg/index"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/controllertest"
)

const holdBound = 10 * time.Second

var nominationTTL = provisioning.DefaultOptions().NominationTTL()

// batchHarness is a harness whose cache has karp's field indexes, which
// the batch controller lists by.
func newBatchHarness(t *testing.T) (*harness, *batchhold.Controller) {
	t.Helper()
	register := func(ctx context.Context, mgr manager.Manager, cluster *state.Cluster) error {
		if err := index.Install(ctx, mgr.GetFieldIndexer()); err != nil {
			return err
		}
		return statecontrollers.Register(ctx, mgr, cluster)
	}
	base := controllertest.New(t, env, register, fake.New())
	h := &harness{base: base, t: t, ctx: base.Ctx, client: base.Client, clock: base.Clock, provider: base.Provider}
	h.started()
	return h, batchhold.NewController(h.mgr.GetClient(), h.cluster, h.clock, holdBound, nominationTTL)
}

// heldMember creates a NodeClaim of the batch registered to a Node that
// carries the hold; initializedAt zero leaves it uninitialized.
func (h *harness) heldMember(name, batch string, initializedAt time.Time) (*karpv1.NodeClaim, *corev1.Node) {
	h.t.Helper()
	node := test.MakeNode(name).ProviderID("fake://" + name).Taint(karpv1.BatchHoldNoScheduleTaint).Obj()
	node.Labels[karpv1.NodeRegisteredLabelKey] = "true"
	h.create(node)
	nc := test.MakeNodeClaim(name).NodePool("default").
		Annotations(map[string]string{karpv1.ProvisioningBatchAnnotationKey: batch}).Obj()
	h.create(nc)
	w := test.MakeNodeClaim(name).ProviderID("fake://"+name).NodeName(name).
		Condition(karpv1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", h.clock.Now()).
		Condition(karpv1.ConditionTypeRegistered, metav1.ConditionTrue, "Registered", h.clock.Now())
	if !initializedAt.IsZero() {
		w = w.Condition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", initializedAt)
	}
	nc.Status = w.Obj().Status
	if err := h.client.Status().Update(h.ctx, nc); err != nil {
		h.t.Fatal(err)
	}
	return nc, node
}

// initialize marks the NodeClaim initialized at the fake clock's time.
func (h *harness) initialize(nc *karpv1.NodeClaim) {
	h.t.Helper()
	got := &karpv1.NodeClaim{}
	if err := h.client.Get(h.ctx, client.ObjectKeyFromObject(nc), got); err != nil {
		h.t.Fatal(err)
	}
	got.Status.Conditions = test.MakeNodeClaim(nc.Name).
		Condition(karpv1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", h.clock.Now()).
		Condition(karpv1.ConditionTypeRegistered, metav1.ConditionTrue, "Registered", h.clock.Now()).
		Condition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", h.clock.Now()).Obj().Status.Conditions
	if err := h.client.Status().Update(h.ctx, got); err != nil {
		h.t.Fatal(err)
	}
}

// held reports whether the Node (read from the API) carries the hold.
func (h *harness) held(node *corev1.Node) bool {
	h.t.Helper()
	got := &corev1.Node{}
	if err := h.client.Get(h.ctx, client.ObjectKeyFromObject(node), got); err != nil {
		h.t.Fatal(err)
	}
	return slices.ContainsFunc(got.Spec.Taints, karpv1.IsBatchHoldTaint)
}

// reconcileBatch runs the controller on the batch once the cache shows
// every member of the batch in the wanted initialized state.
func (h *harness) reconcileBatch(c *batchhold.Controller, batch string, initialized map[string]bool) reconcile.Result {
	h.t.Helper()
	h.eventually("batch members in the cache", func() bool {
		var list karpv1.NodeClaimList
		if err := h.mgr.GetClient().List(h.ctx, &list, client.MatchingFields{index.NodeClaimProvisioningBatch: batch}); err != nil {
			return false
		}
		seen := 0
		for _, nc := range list.Items {
			want, ok := initialized[nc.Name]
			if !ok {
				continue
			}
			if nc.StatusConditions().IsTrue(karpv1.ConditionTypeInitialized) != want || nc.Status.NodeName == "" {
				return false
			}
			seen++
		}
		return seen == len(initialized)
	})
	res, err := c.Reconcile(h.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: batch}})
	if err != nil {
		h.t.Fatalf("reconciling batch %s: %v", batch, err)
	}
	return res
}

// TestBatchHoldLiftsTogetherOnceTheBatchIsInitialized: an initialized
// node stays held while a peer of its batch is still starting (and the
// controller comes back when the bound would run out); once the peer is
// initialized too, both nodes are lifted in the same pass, and the pods
// planned for them carry their node as the scheduler hint.
func TestBatchHoldLiftsTogetherOnceTheBatchIsInitialized(t *testing.T) {
	h, c := newBatchHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	a, nodeA := h.heldMember("batch-a", "b1", h.clock.Now())
	b, nodeB := h.heldMember("batch-b", "b1", time.Time{})
	pods := h.pendingPods(test.MakePod("for-a").Requests("cpu", "1").Obj(), test.MakePod("for-b").Requests("cpu", "1").Obj())
	h.cluster.Nominate(pods[0], state.NodeClaimID(a.Name), time.Hour)
	h.cluster.Nominate(pods[1], state.NodeClaimID(b.Name), time.Hour)

	h.clock.Step(3 * time.Second)
	res := h.reconcileBatch(c, "b1", map[string]bool{a.Name: true, b.Name: false})
	if !h.held(nodeA) || !h.held(nodeB) {
		t.Fatalf("a node was lifted while its batch is starting: held a=%v b=%v", h.held(nodeA), h.held(nodeB))
	}
	// Condition times are stored to the second.
	if want := holdBound - 3*time.Second; res.RequeueAfter > want || res.RequeueAfter <= want-time.Second {
		t.Errorf("requeue after %s, want %s (when a's hold runs out)", res.RequeueAfter, want)
	}

	h.initialize(b)
	if res := h.reconcileBatch(c, "b1", map[string]bool{a.Name: true, b.Name: true}); res.RequeueAfter != 0 {
		t.Errorf("requeue after %s with nothing left held", res.RequeueAfter)
	}
	if h.held(nodeA) || h.held(nodeB) {
		t.Errorf("batch initialized but still held: a=%v b=%v", h.held(nodeA), h.held(nodeB))
	}
	if got := h.nominatedNodeName(pods[0]); got != nodeA.Name {
		t.Errorf("pod for-a hinted %q, want %q", got, nodeA.Name)
	}
	if got := h.nominatedNodeName(pods[1]); got != nodeB.Name {
		t.Errorf("pod for-b hinted %q, want %q", got, nodeB.Name)
	}
}

// TestBatchHoldIsBounded: a node initialized longer than the bound is
// lifted on its own while a peer never comes; the peer's hold, once it is
// initialized, then waits for nobody.
func TestBatchHoldIsBounded(t *testing.T) {
	h, c := newBatchHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	early := h.clock.Now()
	_, nodeA := h.heldMember("bound-a", "b2", early)
	_, nodeB := h.heldMember("bound-b", "b2", early.Add(5*time.Second))
	c2, _ := h.heldMember("bound-c", "b2", time.Time{})

	h.clock.Step(holdBound)
	res := h.reconcileBatch(c, "b2", map[string]bool{"bound-a": true, "bound-b": true, c2.Name: false})
	if h.held(nodeA) {
		t.Error("bound-a still held after the bound")
	}
	if !h.held(nodeB) {
		t.Error("bound-b lifted before its bound")
	}
	if res.RequeueAfter > 5*time.Second || res.RequeueAfter <= 4*time.Second {
		t.Errorf("requeue after %s, want 5s (when bound-b's hold runs out)", res.RequeueAfter)
	}
}

// TestBatchHoldDoesNotWaitForADeletingPeer: a peer being deleted (its
// launch failed) will not join, so the rest of the batch goes.
func TestBatchHoldDoesNotWaitForADeletingPeer(t *testing.T) {
	h, c := newBatchHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	_, nodeA := h.heldMember("gone-a", "b3", h.clock.Now())
	b, _ := h.heldMember("gone-b", "b3", time.Time{})
	if err := h.client.Delete(h.ctx, b); err != nil {
		t.Fatal(err)
	}
	h.eventually("gone-b deleting in the cache", func() bool {
		got := &karpv1.NodeClaim{}
		err := h.mgr.GetClient().Get(h.ctx, client.ObjectKeyFromObject(b), got)
		return err != nil || !got.DeletionTimestamp.IsZero()
	})
	h.reconcileBatch(c, "b3", map[string]bool{"gone-a": true})
	if h.held(nodeA) {
		t.Error("gone-a still held, waiting on a deleting peer")
	}
}

// TestProvisionerMarksMultiNodeBatches: NodeClaims created by one pass
// share a batch annotation when there are several, and a lone NodeClaim
// gets none (nothing to wait for).
func TestProvisionerMarksMultiNodeBatches(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	// The fake provider's largest types have 16 cpu: three 10-cpu pods
	// need three NodeClaims.
	h.pendingPods(
		test.MakePod("big-1").Requests("cpu", "10").Obj(),
		test.MakePod("big-2").Requests("cpu", "10").Obj(),
		test.MakePod("big-3").Requests("cpu", "10").Obj(),
	)
	res := h.schedule()
	if len(res.Created) < 2 {
		t.Fatalf("created %v, want several NodeClaims", res.Created)
	}
	batches := map[string]int{}
	for _, nc := range h.nodeClaims() {
		batches[nc.Annotations[karpv1.ProvisioningBatchAnnotationKey]]++
	}
	if len(batches) != 1 || batches[""] != 0 {
		t.Errorf("batch annotations %v, want one shared non-empty batch", batches)
	}
}

func TestProvisionerLeavesALoneNodeClaimUnbatched(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	h.pendingPods(test.MakePod("small").Requests("cpu", "1").Obj())
	if res := h.schedule(); len(res.Created) != 1 {
		t.Fatalf("created %v, want one NodeClaim", res.Created)
	}
	for _, nc := range h.nodeClaims() {
		if v, ok := nc.Annotations[karpv1.ProvisioningBatchAnnotationKey]; ok {
			t.Errorf("a lone NodeClaim has batch annotation %q", v)
		}
	}
}

// TestBatchHoldSeenLateIsLifted: a NodeClaim can be initialized before
// the cache has its Node with the hold (registration and initialization
// in one pass). The batch, complete by then, is reconciled again when the
// held Node shows up, and the hold goes; without that the Node would stay
// held for good while karp counts its room as free.
func TestBatchHoldSeenLateIsLifted(t *testing.T) {
	h, c := newBatchHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	_, nodeA := h.heldMember("late-a", "b4", h.clock.Now())
	_, nodeB := h.heldMember("late-b", "b4", h.clock.Now())
	// The Nodes as the cache had them before registration's write.
	for _, node := range []*corev1.Node{nodeA, nodeB} {
		got := &corev1.Node{}
		if err := h.client.Get(h.ctx, client.ObjectKeyFromObject(node), got); err != nil {
			t.Fatal(err)
		}
		got.Spec.Taints = nil
		if err := h.client.Update(h.ctx, got); err != nil {
			t.Fatal(err)
		}
	}
	before := reconciles(t, c.Name())
	if err := c.Register(h.ctx, h.mgr); err != nil {
		t.Fatal(err)
	}
	// Sync point: the controller took its first look at the complete batch
	// (its NodeClaims' create events) while no Node shows the hold yet.
	h.eventually("the batch reconciled before the holds show", func() bool { return reconciles(t, c.Name()) > before })
	// Registration's write lands: the hold and the batch annotation.
	for _, node := range []*corev1.Node{nodeA, nodeB} {
		got := &corev1.Node{}
		if err := h.client.Get(h.ctx, client.ObjectKeyFromObject(node), got); err != nil {
			t.Fatal(err)
		}
		got.Spec.Taints = []corev1.Taint{karpv1.BatchHoldNoScheduleTaint}
		got.Annotations = map[string]string{karpv1.ProvisioningBatchAnnotationKey: "b4"}
		if err := h.client.Update(h.ctx, got); err != nil {
			t.Fatal(err)
		}
	}
	h.eventually("holds seen late lifted", func() bool { return !h.held(nodeA) && !h.held(nodeB) })
}

// TestBatchHoldLiftOnAStaleCacheIsQuiet: the batch is reconciled again as
// its NodeClaims change, often before the cache has the lifted Nodes. A
// Node lifted from the copy the cache still shows is not patched again,
// and a lift whose guard fails (the taints changed meanwhile) is no error
// and removes nothing.
func TestBatchHoldLiftOnAStaleCacheIsQuiet(t *testing.T) {
	h, _ := newBatchHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	_, nodeA := h.heldMember("stale-a", "b5", h.clock.Now())
	_, nodeB := h.heldMember("stale-b", "b5", h.clock.Now())
	// The cache frozen before any lift: every Node read returns the copy
	// taken here, hold and all.
	stale := map[string]client.Object{}
	h.eventually("held nodes in the cache", func() bool {
		for _, node := range []*corev1.Node{nodeA, nodeB} {
			got := &corev1.Node{}
			if err := h.mgr.GetClient().Get(h.ctx, client.ObjectKeyFromObject(node), got); err != nil ||
				!slices.ContainsFunc(got.Spec.Taints, karpv1.IsBatchHoldTaint) {
				return false
			}
			stale[node.Name] = got
		}
		return true
	})
	// The controller lifts a batch's nodes in parallel: the count is
	// atomic.
	var patches atomic.Int32
	frozen := interceptor.NewClient(noWatch{h.mgr.GetClient()}, interceptor.Funcs{
		Get: laggingGets(stale),
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			patches.Add(1)
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	c := batchhold.NewController(frozen, h.cluster, h.clock, holdBound, nominationTTL)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "b5"}}
	h.reconcileBatch(c, "b5", map[string]bool{"stale-a": true, "stale-b": true})
	if h.held(nodeA) || h.held(nodeB) || patches.Load() != 2 {
		t.Fatalf("first pass: held a=%v b=%v after %d patches, want both lifted by 2", h.held(nodeA), h.held(nodeB), patches.Load())
	}
	if _, err := c.Reconcile(h.ctx, req); err != nil || patches.Load() != 2 {
		t.Errorf("second pass on the stale cache: err %v, %d patches in all, want no error and none new", err, patches.Load())
	}

	// A fresh controller does not know what it lifted: its guarded patch
	// fails on the API server, which is no error, and another taint added
	// meanwhile stays.
	for _, node := range []*corev1.Node{nodeA, nodeB} {
		got := &corev1.Node{}
		if err := h.client.Get(h.ctx, client.ObjectKeyFromObject(node), got); err != nil {
			t.Fatal(err)
		}
		got.Spec.Taints = append(got.Spec.Taints, corev1.Taint{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoSchedule})
		if err := h.client.Update(h.ctx, got); err != nil {
			t.Fatal(err)
		}
	}
	fresh := batchhold.NewController(frozen, h.cluster, h.clock, holdBound, nominationTTL)
	if _, err := fresh.Reconcile(h.ctx, req); err != nil {
		t.Errorf("lift from a stale copy: %v, want no error", err)
	}
	for _, node := range []*corev1.Node{nodeA, nodeB} {
		got := &corev1.Node{}
		if err := h.client.Get(h.ctx, client.ObjectKeyFromObject(node), got); err != nil {
			t.Fatal(err)
		}
		maintenance := func(t corev1.Taint) bool { return t.Key == "example.com/maintenance" }
		if slices.ContainsFunc(got.Spec.Taints, karpv1.IsBatchHoldTaint) || !slices.ContainsFunc(got.Spec.Taints, maintenance) {
			t.Errorf("node %s taints %v, want example.com/maintenance kept and no hold", node.Name, got.Spec.Taints)
		}
	}
}

// TestBatchHoldLiftRetriesWhenTheTaintsMovedUnderIt: the node lifecycle
// controller lifts not-ready as a batch's nodes turn Ready, so the lift's
// guard, made from a cache that still shows not-ready before the hold,
// fails while the hold is still there. Without the API server's copy the
// batch comes back within a second; with it, the lift is made again from
// that copy at once.
func TestBatchHoldLiftRetriesWhenTheTaintsMovedUnderIt(t *testing.T) {
	h, _ := newBatchHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	_, nodeA := h.heldMember("moved-a", "b12", h.clock.Now())
	_, nodeB := h.heldMember("moved-b", "b12", h.clock.Now())
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	setTaints := func(node *corev1.Node, taints ...corev1.Taint) {
		t.Helper()
		got := &corev1.Node{}
		if err := h.client.Get(h.ctx, client.ObjectKeyFromObject(node), got); err != nil {
			t.Fatal(err)
		}
		got.Spec.Taints = taints
		if err := h.client.Update(h.ctx, got); err != nil {
			t.Fatal(err)
		}
	}
	for _, node := range []*corev1.Node{nodeA, nodeB} {
		setTaints(node, notReady, karpv1.BatchHoldNoScheduleTaint)
	}
	stale := map[string]client.Object{}
	// The API server's admission appends not-ready to a new Node's
	// taints: the cache may first show [hold, not-ready], where the
	// hold's place is the same as after the change below.
	h.eventually("not-ready ahead of the hold in the cache", func() bool {
		for _, node := range []*corev1.Node{nodeA, nodeB} {
			got := &corev1.Node{}
			if err := h.mgr.GetClient().Get(h.ctx, client.ObjectKeyFromObject(node), got); err != nil || len(got.Spec.Taints) != 2 ||
				got.Spec.Taints[0].Key != corev1.TaintNodeNotReady || !karpv1.IsBatchHoldTaint(got.Spec.Taints[1]) {
				return false
			}
			stale[node.Name] = got
		}
		return true
	})
	for _, node := range []*corev1.Node{nodeA, nodeB} {
		setTaints(node, karpv1.BatchHoldNoScheduleTaint)
	}
	frozen := interceptor.NewClient(noWatch{h.mgr.GetClient()}, interceptor.Funcs{Get: laggingGets(stale)})
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "b12"}}

	cacheOnly := batchhold.NewController(frozen, h.cluster, h.clock, holdBound, nominationTTL)
	h.reconcileBatch(cacheOnly, "b12", map[string]bool{"moved-a": true, "moved-b": true})
	res, err := cacheOnly.Reconcile(h.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !h.held(nodeA) || !h.held(nodeB) {
		t.Fatal("a lift guarded by a stale copy removed something")
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > time.Second {
		t.Errorf("guard failed with the hold still there: requeue after %s, want within a second", res.RequeueAfter)
	}

	withAPI := batchhold.NewController(frozen, h.cluster, h.clock, holdBound, nominationTTL).WithAPIReader(h.client)
	if res, err = withAPI.Reconcile(h.ctx, req); err != nil {
		t.Fatal(err)
	}
	if h.held(nodeA) || h.held(nodeB) {
		t.Errorf("held a=%v b=%v after a lift with the API server's copy, want both lifted", h.held(nodeA), h.held(nodeB))
	}
	if res.RequeueAfter != 0 {
		t.Errorf("requeue after %s once lifted, want none", res.RequeueAfter)
	}
}

// noWatch lets interceptor wrap the manager's client, which has no Watch.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not supported")
}

// TestBatchLiftRenewsTheNominations: pods nominated to a held batch wait
// for the hold, not for the scheduler; their nominations, which count down
// from the solve, get a full TTL from the lift, so a slow start does not
// make them provisionable again while the scheduler is binding them.
func TestBatchLiftRenewsTheNominations(t *testing.T) {
	h, c := newBatchHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	a, nodeA := h.heldMember("renew-a", "b9", time.Time{})
	b, nodeB := h.heldMember("renew-b", "b9", time.Time{})
	pods := h.pendingPods(test.MakePod("renew-for-a").Requests("cpu", "1").Obj(), test.MakePod("renew-for-b").Requests("cpu", "1").Obj())
	h.cluster.Nominate(pods[0], state.NodeClaimID(a.Name), nominationTTL)
	h.cluster.NominateUnhinted(pods[1], state.NodeClaimID(b.Name), nominationTTL)

	// The batch takes most of the TTL to start.
	h.clock.Step(nominationTTL - 2*time.Second)
	h.initialize(a)
	h.initialize(b)
	h.reconcileBatch(c, "b9", map[string]bool{a.Name: true, b.Name: true})
	if h.held(nodeA) || h.held(nodeB) {
		t.Fatal("batch initialized but still held")
	}
	// Past the nominations' first expiry, within a TTL of the lift.
	h.clock.Step(nominationTTL - time.Second)
	for i, want := range []string{a.Name, b.Name} {
		if got := h.cluster.NominatedNode(client.ObjectKeyFromObject(pods[i])); got != state.NodeClaimID(want) {
			t.Errorf("pod %s nominated to %q %s after the lift, want %q", pods[i].Name, got, nominationTTL-time.Second, state.NodeClaimID(want))
		}
	}
	if n := len(h.cluster.ProvisionablePods()); n != 0 {
		t.Errorf("%d pods provisionable again while their lifted nodes are still within the TTL", n)
	}
	// A full TTL after the lift they expire as before.
	h.clock.Step(2 * time.Second)
	if got := h.cluster.NominatedNode(client.ObjectKeyFromObject(pods[0])); got != "" {
		t.Errorf("pod %s still nominated to %q a TTL after the lift", pods[0].Name, got)
	}
}

// TestBatchHoldWaitsForACacheBehindRegistration: every NodeClaim of the
// batch is initialized, but the cache still has one Node as it was
// before registration (no hold yet, not labelled registered). That Node
// is not open, it is about to be held: its peers stay held until the
// cache shows the hold, and then all are lifted together.
func TestBatchHoldWaitsForACacheBehindRegistration(t *testing.T) {
	h, c := newBatchHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	a, nodeA := h.heldMember("lag-a", "b10", h.clock.Now())
	b, nodeB := h.heldMember("lag-b", "b10", h.clock.Now())
	// nodeB as the cache would still show it before registration's write.
	unregistered := &corev1.Node{}
	if err := h.client.Get(h.ctx, client.ObjectKeyFromObject(nodeB), unregistered); err != nil {
		t.Fatal(err)
	}
	registered := unregistered.DeepCopy()
	delete(unregistered.Labels, karpv1.NodeRegisteredLabelKey)
	unregistered.Spec.Taints = []corev1.Taint{karpv1.UnregisteredNoExecuteTaint}
	if err := h.client.Update(h.ctx, unregistered); err != nil {
		t.Fatal(err)
	}
	h.eventually("the unregistered Node in the cache", func() bool {
		cached := &corev1.Node{}
		return h.mgr.GetClient().Get(h.ctx, client.ObjectKeyFromObject(nodeB), cached) == nil &&
			cached.Labels[karpv1.NodeRegisteredLabelKey] == ""
	})
	h.reconcileBatch(c, "b10", map[string]bool{a.Name: true, b.Name: true})
	if !h.held(nodeA) {
		t.Fatal("a peer was lifted while the cache had not seen the other node's registration")
	}

	// Registration's write reaches the cache.
	latest := &corev1.Node{}
	if err := h.client.Get(h.ctx, client.ObjectKeyFromObject(nodeB), latest); err != nil {
		t.Fatal(err)
	}
	latest.Labels, latest.Spec.Taints = registered.Labels, registered.Spec.Taints
	if err := h.client.Update(h.ctx, latest); err != nil {
		t.Fatal(err)
	}
	h.eventually("the registered Node in the cache", func() bool {
		cached := &corev1.Node{}
		return h.mgr.GetClient().Get(h.ctx, client.ObjectKeyFromObject(nodeB), cached) == nil &&
			cached.Labels[karpv1.NodeRegisteredLabelKey] == "true"
	})
	h.reconcileBatch(c, "b10", map[string]bool{a.Name: true, b.Name: true})
	if h.held(nodeA) || h.held(nodeB) {
		t.Errorf("still held once the cache caught up: a=%v b=%v", h.held(nodeA), h.held(nodeB))
	}
}

// TestBatchLiftRestoresAHintTheCacheStillShows: the scheduler cleared a
// pod's hint (it tried the pod on the held nodes), but the lagging cache
// still shows the pod hinted. The lift confirms the hints against the API
// server and writes that one again before the nodes open; a hint the API
// server still has is not written again.
func TestBatchLiftRestoresAHintTheCacheStillShows(t *testing.T) {
	h, _ := newBatchHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	a, nodeA := h.heldMember("confirm-a", "b11", h.clock.Now())
	b, nodeB := h.heldMember("confirm-b", "b11", h.clock.Now())
	pods := h.pendingPods(test.MakePod("cleared").Requests("cpu", "1").Obj(), test.MakePod("intact").Requests("cpu", "1").Obj())
	h.cluster.Nominate(pods[0], state.NodeClaimID(a.Name), nominationTTL)
	h.cluster.Nominate(pods[1], state.NodeClaimID(b.Name), nominationTTL)
	hinter := hint.NewController(h.mgr.GetClient(), h.cluster)
	for _, nc := range []*karpv1.NodeClaim{a, b} {
		if _, err := hinter.Reconcile(h.ctx, nc); err != nil {
			t.Fatal(err)
		}
	}
	// The cache frozen with both hints: every read of the pods returns
	// these copies.
	frozen := map[string]client.Object{}
	h.eventually("hinted pods in the cache", func() bool {
		for i, node := range []*corev1.Node{nodeA, nodeB} {
			got := &corev1.Pod{}
			if err := h.mgr.GetClient().Get(h.ctx, client.ObjectKeyFromObject(pods[i]), got); err != nil ||
				got.Status.NominatedNodeName != node.Name {
				return false
			}
			frozen[got.Name] = got
		}
		return true
	})
	// The scheduler tries the first pod on the held nodes and clears its
	// hint; the cache does not show it.
	h.clearHint(pods[0])
	lagging, hintWrites := h.laggingClient(frozen)
	c := batchhold.NewController(lagging, h.cluster, h.clock, holdBound, nominationTTL).WithAPIReader(h.client)
	h.reconcileBatch(c, "b11", map[string]bool{a.Name: true, b.Name: true})
	if h.held(nodeA) || h.held(nodeB) {
		t.Fatal("batch initialized but still held")
	}
	if got := h.nominatedNodeName(pods[0]); got != nodeA.Name {
		t.Errorf("pod %s lifted with hint %q, want %q written again", pods[0].Name, got, nodeA.Name)
	}
	if got := h.nominatedNodeName(pods[1]); got != nodeB.Name {
		t.Errorf("pod %s hint %q, want %q", pods[1].Name, got, nodeB.Name)
	}
	if *hintWrites != 1 {
		t.Errorf("%d hint writes in the lift, want 1 (only the cleared hint)", *hintWrites)
	}
}

// reconciles is how many reconciles of the named controller finished, as
// controller-runtime counts them (controller_runtime_reconcile_total, all
// results).
func reconciles(t *testing.T, controller string) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}
