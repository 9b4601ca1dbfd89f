package batchhold

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning/hint"
	"github.com/karp-autoscaler/karp/pkg/index"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// Controller lifts the batch hold.
type Controller struct {
	kubeClient client.Client
	// apiReader reads straight from the API server: the lift confirms the
	// scheduler hints there (nil: the cache is trusted).
	apiReader client.Reader
	cluster   *state.Cluster
	clock     clock.Clock
	// maxHold bounds how long an initialized node stays held; 0 lifts at
	// once (the nodes of a batch made before the hold was turned off).
	maxHold time.Duration
	// nominationTTL is how long the nominations to a node last from its
	// lift (see state.Cluster.RenewNominations).
	nominationTTL time.Duration
	// lifted remembers, per Node name, the resourceVersion each lift was
	// made from: a batch is reconciled again as its NodeClaims change, and
	// the cache may still show the hold on a Node just lifted.
	lifted sync.Map
}

var _ reconcile.Reconciler = (*Controller)(nil)

// NewController returns the batch-hold lifter.
func NewController(kubeClient client.Client, cluster *state.Cluster, clk clock.Clock, maxHold, nominationTTL time.Duration) *Controller {
	return &Controller{kubeClient: kubeClient, cluster: cluster, clock: clk, maxHold: maxHold, nominationTTL: nominationTTL}
}

// WithAPIReader has the lift confirm the scheduler hints against the API
// server, not only the cache (see hint.WriteConfirmed).
func (c *Controller) WithAPIReader(r client.Reader) *Controller {
	c.apiReader = r
	return c
}

// Name is the controller's name.
func (c *Controller) Name() string { return "provisioner.batch" }

// Register queues a batch (by its name) whenever one of its NodeClaims
// appears, is initialized, starts deleting or is gone, and whenever a
// Node of the batch (registration copies the annotation) shows the hold:
// a NodeClaim can be initialized in the same pass that registered it,
// before the cache has its Node with the hold, and that Node must not be
// missed once the batch is complete.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	err := builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(batchOf), builder.WithPredicates(batchChanged)).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(batchOf), builder.WithPredicates(holdAppeared)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(conflict.Requeue(c))
	if err != nil {
		return fmt.Errorf("registering %s: %w", c.Name(), err)
	}
	return nil
}

func batchName(o client.Object) string {
	return o.GetAnnotations()[karpv1.ProvisioningBatchAnnotationKey]
}

func batchOf(_ context.Context, o client.Object) []reconcile.Request {
	if name := batchName(o); name != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
	}
	return nil
}

var batchChanged = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return batchName(e.Object) != "" },
	DeleteFunc: func(e event.DeleteEvent) bool { return batchName(e.Object) != "" },
	UpdateFunc: func(e event.UpdateEvent) bool {
		if batchName(e.ObjectNew) == "" {
			return false
		}
		before, okBefore := e.ObjectOld.(*karpv1.NodeClaim)
		after, okAfter := e.ObjectNew.(*karpv1.NodeClaim)
		if !okBefore || !okAfter {
			return false
		}
		return initialized(before) != initialized(after) || before.DeletionTimestamp.IsZero() != after.DeletionTimestamp.IsZero()
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// holdAppeared passes Nodes of a batch that carry the hold, when they
// appear with it or gain it, and held Nodes whose taints change: a lift
// whose guard failed on a stale copy is then made from the new one.
var holdAppeared = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return batchName(e.Object) != "" && isHeld(e.Object) },
	UpdateFunc: func(e event.UpdateEvent) bool {
		if batchName(e.ObjectNew) == "" || !isHeld(e.ObjectNew) {
			return false
		}
		before, okBefore := e.ObjectOld.(*corev1.Node)
		after, okAfter := e.ObjectNew.(*corev1.Node)
		return !isHeld(e.ObjectOld) || (okBefore && okAfter && !equality.Semantic.DeepEqual(before.Spec.Taints, after.Spec.Taints))
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

func isHeld(o client.Object) bool {
	node, ok := o.(*corev1.Node)
	return ok && slices.ContainsFunc(node.Spec.Taints, karpv1.IsBatchHoldTaint)
}

func initialized(nc *karpv1.NodeClaim) bool {
	return nc.StatusConditions().IsTrue(karpv1.ConditionTypeInitialized)
}

// heldNode is an initialized NodeClaim of the batch whose Node still
// carries the hold.
type heldNode struct {
	nodeClaim *karpv1.NodeClaim
	node      *corev1.Node
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch

// Reconcile lifts the hold from the batch's nodes that may go: all of
// them once the batch is complete, else those held longer than maxHold.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	claims := &karpv1.NodeClaimList{}
	// The cache's own objects (read only): a batch is reconciled on each
	// of its NodeClaims' transitions, and copying the whole batch each
	// time was a large share of a scale-up's allocations.
	if err := c.kubeClient.List(ctx, claims, client.MatchingFields{index.NodeClaimProvisioningBatch: req.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeclaims of batch %s: %w", req.Name, err)
	}
	complete := true
	var held []heldNode
	for i := range claims.Items {
		nc := &claims.Items[i]
		if !nc.DeletionTimestamp.IsZero() {
			// It will not join: its nodes need not wait for it.
			continue
		}
		if !initialized(nc) || nc.Status.NodeName == "" {
			complete = false
			continue
		}
		node := &corev1.Node{}
		if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node, &client.GetOptions{UnsafeDisableDeepCopy: ptr.To(true)}); err != nil {
			if apierrors.IsNotFound(err) {
				c.lifted.Delete(nc.Status.NodeName)
				continue
			}
			return reconcile.Result{}, fmt.Errorf("getting node %s: %w", nc.Status.NodeName, err)
		}
		if node.Labels[karpv1.NodeRegisteredLabelKey] != "true" {
			// The cache has not seen registration's write yet, which
			// brings the hold: the Node is not open, it is about to be
			// held. Lifting its peers now would have the scheduler try
			// its pods on them and clear their hints (the Node watch
			// brings the batch back when the hold shows).
			complete = false
			continue
		}
		if !slices.ContainsFunc(node.Spec.Taints, karpv1.IsBatchHoldTaint) {
			c.lifted.Delete(node.Name)
			continue
		}
		if rv, ok := c.lifted.Load(node.Name); ok && rv == node.ResourceVersion {
			continue // lifted already; the cache has not caught up
		}
		held = append(held, heldNode{nodeClaim: nc, node: node})
	}
	lift, wait := c.due(held, complete)
	if len(lift) > 0 {
		reason := "batch initialized"
		if !complete {
			reason = "hold expired"
		}
		start := c.clock.Now()
		hinted, stale, err := c.lift(ctx, lift)
		if err != nil {
			return reconcile.Result{}, err
		}
		log.FromContext(ctx).Info("lifted batch hold", "batch", req.Name, "nodes", len(lift)-stale, "reason", reason,
			"hintsWritten", hinted, "duration", c.clock.Since(start).String())
		if stale > 0 && (wait == 0 || wait > staleRetry) {
			// A Node whose taints changed under the lift may still be
			// held, and no watch event need come for it: nothing else
			// brings the batch back.
			wait = staleRetry
		}
	}
	return reconcile.Result{RequeueAfter: wait}, nil
}

// staleRetry is how soon a batch is reconciled again when a lift's guard
// failed and the API server's copy could not settle it.
const staleRetry = time.Second

// due splits the held nodes into those to lift now and how long until the
// next of the others may go (0: none left).
func (c *Controller) due(held []heldNode, complete bool) ([]heldNode, time.Duration) {
	if complete || c.maxHold <= 0 {
		return held, 0
	}
	now := c.clock.Now()
	var lift []heldNode
	var wait time.Duration
	for _, h := range held {
		since := now.Sub(initializedAt(h.nodeClaim))
		if since >= c.maxHold {
			lift = append(lift, h)
			continue
		}
		if left := c.maxHold - since; wait == 0 || left < wait {
			wait = left
		}
	}
	return lift, wait
}

func initializedAt(nc *karpv1.NodeClaim) time.Time {
	if cond := nc.StatusConditions().Get(karpv1.ConditionTypeInitialized); cond != nil {
		return cond.LastTransitionTime.Time
	}
	return time.Time{}
}

// liftWorkers bounds concurrent Node patches. It is as large as a big
// batch: while some nodes of the batch are open and others still held,
// the scheduler tries pods planned for the held ones and places them by
// its own scoring, so the lift is one burst of requests.
const liftWorkers = 128

// lift re-hints the pods planned for each node (the scheduler clears a
// pod's hint each time it fails to place it), confirming the hints
// against the API server, then removes the hold from all the nodes as
// close together as it can. It returns the hints written and how many
// nodes may still be held because their taints changed under the lift
// and the API server's copy did not settle it.
func (c *Controller) lift(ctx context.Context, held []heldNode) (int, int, error) {
	var hints []hint.Hint
	for _, h := range held {
		for _, pod := range c.cluster.HintedPods(state.NodeClaimID(h.nodeClaim.Name)) {
			hints = append(hints, hint.Hint{Pod: pod, Node: h.node.Name})
		}
	}
	hinted, err := hint.WriteConfirmed(ctx, c.kubeClient, c.apiReader, hints)
	if err != nil {
		// Lifted all the same, on the cache's word: a missing hint costs
		// the plan, a batch left held costs its pods the hold's bound.
		log.FromContext(ctx).Error(err, "confirming scheduler hints before the lift")
	}
	errs := make([]error, len(held))
	var stale atomic.Int32
	workqueue.ParallelizeUntil(ctx, liftWorkers, len(held), func(i int) {
		var maybeHeld bool
		if maybeHeld, errs[i] = c.liftOne(ctx, held[i]); maybeHeld {
			stale.Add(1)
		}
	})
	return hinted, int(stale.Load()), errors.Join(errs...)
}

// liftOne removes the hold from one node. The patch is guarded by the
// cache's copy of the taints; when that guard fails (the node lifecycle
// controller lifts not-ready as nodes of a batch turn Ready, and a busy
// API server's watch lags), the lift is made again from the API server's
// copy. It reports whether the node may still be held.
func (c *Controller) liftOne(ctx context.Context, h heldNode) (bool, error) {
	// A copy: the patch writes the response into it, and this is the
	// cache's object.
	node := h.node.DeepCopy()
	err := c.kubeClient.Patch(ctx, node, client.RawPatch(types.JSONPatchType, liftPatch(h.node)))
	if apierrors.IsInvalid(err) && c.apiReader != nil {
		fresh := &corev1.Node{}
		switch getErr := c.apiReader.Get(ctx, client.ObjectKeyFromObject(h.node), fresh); {
		case apierrors.IsNotFound(getErr):
			return false, nil
		case getErr != nil:
			return false, errors.Join(err, getErr)
		case !slices.ContainsFunc(fresh.Spec.Taints, karpv1.IsBatchHoldTaint):
			// Lifted already (by this controller before a restart, or
			// its cache is behind its own write).
			return false, nil
		}
		node = fresh.DeepCopy()
		err = c.kubeClient.Patch(ctx, node, client.RawPatch(types.JSONPatchType, liftPatch(fresh)))
	}
	switch {
	case err == nil:
		c.lifted.Store(h.node.Name, h.node.ResourceVersion)
		c.cluster.RenewNominations(state.NodeClaimID(h.nodeClaim.Name), c.nominationTTL)
		return false, nil
	case apierrors.IsNotFound(err):
		return false, nil
	case apierrors.IsInvalid(err):
		// The test op failed: the taints changed since the copy the
		// patch was made from (most often the hold is gone already).
		// The batch is reconciled again shortly in case it is not.
		log.FromContext(ctx).V(1).Info("batch hold changed before the lift; trying again", "Node", h.node.Name)
		return true, nil
	}
	return false, err
}

// liftPatch removes the hold taint, guarded by a test of that list
// element, so a concurrent change of the taints fails the patch (and the
// batch is reconciled again) instead of removing the wrong taint.
func liftPatch(node *corev1.Node) []byte {
	i := slices.IndexFunc(node.Spec.Taints, karpv1.IsBatchHoldTaint)
	path := fmt.Sprintf("/spec/taints/%d", i)
	raw, _ := json.Marshal([]map[string]any{
		{"op": "test", "path": path, "value": node.Spec.Taints[i]},
		{"op": "remove", "path": path},
	})
	return raw
}
