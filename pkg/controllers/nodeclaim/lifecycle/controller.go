package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/index"
	"github.com/karp-autoscaler/karp/pkg/metrics"
	"github.com/karp-autoscaler/karp/pkg/state/nodepoolhealth"
)

// maxConcurrentReconciles bounds parallel launches; launches are I/O bound.
const maxConcurrentReconciles = 100

// phase is one step of the lifecycle. It mutates the NodeClaim in memory
// and reports whether it deleted the NodeClaim (later phases then skip).
type phase interface {
	reconcile(ctx context.Context, nodeClaim *karpv1.NodeClaim, p *pass) (result reconcile.Result, deleted bool, err error)
}

// pass carries what one phase learned to the later phases of the same
// reconcile.
type pass struct {
	// node is the Node as registration wrote it, newer than the cache.
	node *corev1.Node
	// after are the logs, events and metrics of transitions; they are
	// published only once the NodeClaim patch succeeded, so a conflict
	// and retry does not announce a transition twice.
	after []func()
}

// afterPatch defers fn until the NodeClaim's changes are stored.
func (p *pass) afterPatch(fn func()) { p.after = append(p.after, fn) }

// Controller runs the NodeClaim lifecycle phases.
type Controller struct {
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	clock         clock.Clock
	phases        []phase
	superseded    *superseded
	health        *poolHealth
}

var _ reconcile.ObjectReconciler[*karpv1.NodeClaim] = (*Controller)(nil)

// NewController builds the lifecycle controller.
func NewController(kubeClient client.Client, cp cloudprovider.CloudProvider, clk clock.Clock, recorder events.EventRecorder) *Controller {
	// Registration and liveness report outcomes here; without a State
	// (WithRegistrationHealth) reporting does nothing.
	health := &poolHealth{kubeClient: kubeClient}
	return &Controller{
		kubeClient:    kubeClient,
		cloudProvider: cp,
		clock:         clk,
		superseded:    newSuperseded(),
		health:        health,
		// Phases, in order; each needs the previous one's result.
		phases: []phase{
			// Create the instance and hydrate the status.
			&launch{kubeClient: kubeClient, cloudProvider: cp, recorder: recorder},
			// Join the Node to the NodeClaim.
			&registration{kubeClient: kubeClient, cloudProvider: cp, recorder: recorder, health: health},
			// Wait for the Node to be usable.
			&initialization{kubeClient: kubeClient, recorder: recorder},
			// Give up on NodeClaims stuck before registration.
			&liveness{kubeClient: kubeClient, clock: clk, recorder: recorder, health: health},
		},
	}
}

// WithAPIReader lets registration retry a failed Node sync once from the
// API server's copy of the Node instead of the cache's.
func (c *Controller) WithAPIReader(r client.Reader) *Controller {
	for _, p := range c.phases {
		if reg, ok := p.(*registration); ok {
			reg.apiReader = r
		}
	}
	return c
}

// WithRegistrationHealth records each NodeClaim's registration or
// liveness failure in the State shared with the nodepool
// registrationhealth controller, which drives the NodePool's
// NodeRegistrationHealthy condition.
func (c *Controller) WithRegistrationHealth(state *nodepoolhealth.State) *Controller {
	c.health.state = state
	return c
}

// Name is the controller's name.
func (c *Controller) Name() string { return "nodeclaim.lifecycle" }

// Register watches NodeClaims and the Nodes that join them.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&karpv1.NodeClaim{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(index.NodeClaimRequestsForNode(c.kubeClient)), builder.WithPredicates(nodeChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles, RateLimiter: retryLimiter()}).
		Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
}

// retryLimiter backs a failing NodeClaim off exponentially from 5ms to at
// most maxRetryDelay. Unlike controller-runtime's default it has no
// shared 10-per-second bucket, which a burst of conflicts while a large
// scale-up registers made every NodeClaim wait on; and the cap keeps the
// liveness deadlines (checked on each pass) enforced within a minute.
func retryLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, maxRetryDelay)
}

// maxRetryDelay is the longest a failing NodeClaim waits to be retried.
const maxRetryDelay = time.Minute

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch

// Reconcile adds the finalizer, then runs the phases and patches the result.
func (c *Controller) Reconcile(ctx context.Context, nodeClaim *karpv1.NodeClaim) (reconcile.Result, error) {
	if !nodeClaim.DeletionTimestamp.IsZero() || !cloudprovider.IsManaged(nodeClaim, c.cloudProvider, c.kubeClient.Scheme()) {
		c.superseded.forget(nodeClaim.UID)
		return reconcile.Result{}, nil
	}
	if c.superseded.stale(nodeClaim.UID, nodeClaim.ResourceVersion) {
		// Our last write's event will bring us back with fresh data.
		return reconcile.Result{}, nil
	}
	ctx = metrics.WithController(ctx, c.Name())
	// 1. The finalizer goes on before anything is launched, so an instance
	// never exists without a NodeClaim that will clean it up.
	if !controllerutil.ContainsFinalizer(nodeClaim, karpv1.TerminationFinalizer) {
		stored := nodeClaim.DeepCopy()
		controllerutil.AddFinalizer(nodeClaim, karpv1.TerminationFinalizer)
		if err := c.kubeClient.Patch(ctx, nodeClaim, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("adding finalizer: %w", err))
		}
		c.superseded.add(nodeClaim.UID, stored.ResourceVersion)
	}
	// 2. Run the phases on a copy in memory.
	before := nodeClaim.DeepCopy()
	nodeClaim.StatusConditions().WithClock(c.clock).Initialize()
	var results []reconcile.Result
	var errs []error
	state := &pass{}
	for _, p := range c.phases {
		res, deleted, err := p.reconcile(ctx, nodeClaim, state)
		if deleted {
			if err == nil {
				// A reconcile still holding this version (the cache has
				// not seen the deletion yet) must not launch again.
				c.superseded.add(nodeClaim.UID, before.ResourceVersion)
			}
			return reconcile.Result{}, err
		}
		results = append(results, res)
		errs = append(errs, err)
	}
	// 3. Write back once, then announce what changed.
	if err := c.patch(ctx, before, nodeClaim); err != nil {
		return reconcile.Result{}, errors.Join(append(errs, err)...)
	}
	for _, fn := range state.after {
		fn()
	}
	if err := errors.Join(errs...); err != nil {
		// An error requeues with backoff; a RequeueAfter beside it would
		// be ignored.
		return reconcile.Result{}, err
	}
	return soonest(results...), nil
}

// patch writes metadata and status changes, each with optimistic locking.
func (c *Controller) patch(ctx context.Context, before, nodeClaim *karpv1.NodeClaim) error {
	if !equality.Semantic.DeepEqual(before.ObjectMeta, nodeClaim.ObjectMeta) {
		// Patch a copy: the response carries the stored (old) status.
		patched := nodeClaim.DeepCopy()
		if err := c.kubeClient.Patch(ctx, patched, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return client.IgnoreNotFound(fmt.Errorf("patching nodeclaim: %w", err))
		}
		c.superseded.add(nodeClaim.UID, before.ResourceVersion)
		nodeClaim.ResourceVersion = patched.ResourceVersion
	}
	if !equality.Semantic.DeepEqual(before.Status, nodeClaim.Status) {
		base := before.DeepCopy()
		base.ResourceVersion = nodeClaim.ResourceVersion
		if err := c.kubeClient.Status().Patch(ctx, nodeClaim, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return client.IgnoreNotFound(fmt.Errorf("patching nodeclaim status: %w", err))
		}
		c.superseded.add(nodeClaim.UID, base.ResourceVersion)
	}
	return nil
}

// nodeChanged drops Node updates the lifecycle cannot act on (heartbeats):
// it passes changes of labels, taints, readiness, allocatable or providerID.
var nodeChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*corev1.Node)
		after, ok2 := e.ObjectNew.(*corev1.Node)
		if !ok1 || !ok2 {
			return true
		}
		return before.Spec.ProviderID != after.Spec.ProviderID ||
			!equality.Semantic.DeepEqual(before.Labels, after.Labels) ||
			!equality.Semantic.DeepEqual(before.Spec.Taints, after.Spec.Taints) ||
			!equality.Semantic.DeepEqual(before.Status.Allocatable, after.Status.Allocatable) ||
			nodeReady(before) != nodeReady(after)
	},
}

// soonest returns the result that requeues soonest (zero: no requeue).
func soonest(results ...reconcile.Result) reconcile.Result {
	var out reconcile.Result
	for _, r := range results {
		if r.RequeueAfter > 0 && (out.RequeueAfter == 0 || r.RequeueAfter < out.RequeueAfter) {
			out.RequeueAfter = r.RequeueAfter
		}
	}
	return out
}

// nodesFor lists the Nodes with the NodeClaim's providerID.
func nodesFor(ctx context.Context, kubeClient client.Client, nodeClaim *karpv1.NodeClaim) ([]corev1.Node, error) {
	if nodeClaim.Status.ProviderID == "" {
		return nil, nil
	}
	var list corev1.NodeList
	if err := kubeClient.List(ctx, &list, client.MatchingFields{index.NodeProviderID: nodeClaim.Status.ProviderID}); err != nil {
		return nil, fmt.Errorf("listing nodes by providerID: %w", err)
	}
	return list.Items, nil
}

// deleteNodeClaim deletes the NodeClaim; already gone is fine.
func deleteNodeClaim(ctx context.Context, kubeClient client.Client, nodeClaim *karpv1.NodeClaim) error {
	if err := kubeClient.Delete(ctx, nodeClaim); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting nodeclaim: %w", err)
	}
	return nil
}

// requeueAt returns a result requeueing after d, at least a second.
func requeueAt(d time.Duration) reconcile.Result {
	return reconcile.Result{RequeueAfter: max(d, time.Second)}
}
