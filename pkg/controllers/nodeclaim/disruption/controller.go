package disruption

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/index"
	"github.com/karp-autoscaler/karp/pkg/metrics"
)

// Controller sets the Drifted and Consolidatable conditions.
type Controller struct {
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	clock         clock.Clock
}

var _ reconcile.ObjectReconciler[*karpv1.NodeClaim] = (*Controller)(nil)

// NewController builds the NodeClaim disruption-signals controller.
func NewController(kubeClient client.Client, cp cloudprovider.CloudProvider, clk clock.Clock) *Controller {
	return &Controller{kubeClient: kubeClient, cloudProvider: cp, clock: clk}
}

// Name is the controller's name.
func (c *Controller) Name() string { return "nodeclaim.disruption" }

// Register watches NodeClaims, their NodePools and their NodeClasses.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	b := builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&karpv1.NodeClaim{}).
		// Only spec and annotation (template hash) changes of a NodePool
		// matter; its frequent status updates do not.
		Watches(&karpv1.NodePool{}, handler.EnqueueRequestsFromMapFunc(c.nodeClaimsOfPool),
			builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10})
	for _, nodeClass := range c.cloudProvider.GetSupportedNodeClasses() {
		b = b.Watches(nodeClass, handler.EnqueueRequestsFromMapFunc(c.nodeClaimsOfClass))
	}
	return b.Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/status,verbs=patch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch

// Reconcile recomputes both conditions from the NodeClaim, its NodePool
// and the provider, patches the status once, and requeues for the next
// moment either could change on its own.
func (c *Controller) Reconcile(ctx context.Context, nodeClaim *karpv1.NodeClaim) (reconcile.Result, error) {
	if !nodeClaim.DeletionTimestamp.IsZero() || !cloudprovider.IsManaged(nodeClaim, c.cloudProvider, c.kubeClient.Scheme()) {
		return reconcile.Result{}, nil
	}
	poolName := nodeClaim.Labels[karpv1.NodePoolLabelKey]
	if poolName == "" {
		// Standalone NodeClaims are never disruption candidates.
		return reconcile.Result{}, nil
	}
	ctx = metrics.WithController(ctx, c.Name())
	nodePool := &karpv1.NodePool{}
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: poolName}, nodePool); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("getting nodepool: %w", err))
	}
	before := nodeClaim.DeepCopy()
	conditions := nodeClaim.StatusConditions().WithClock(c.clock)
	driftResult, driftErr := c.drift(ctx, nodePool, nodeClaim, conditions)
	consolidationResult := consolidatable(c.clock.Now(), nodePool, nodeClaim, conditions)
	if !equality.Semantic.DeepEqual(before.Status, nodeClaim.Status) {
		if err := c.kubeClient.Status().Patch(ctx, nodeClaim, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching nodeclaim status: %w", err))
		}
	}
	if driftErr != nil {
		return reconcile.Result{}, driftErr
	}
	return earliest(driftResult, consolidationResult), nil
}

// earliest returns the result that requeues soonest (zero means never).
func earliest(a, b reconcile.Result) reconcile.Result {
	switch {
	case a.RequeueAfter == 0:
		return b
	case b.RequeueAfter == 0:
		return a
	case a.RequeueAfter < b.RequeueAfter:
		return a
	default:
		return b
	}
}

func (c *Controller) nodeClaimsOfPool(ctx context.Context, o client.Object) []reconcile.Request {
	return c.requests(ctx, client.MatchingLabels{karpv1.NodePoolLabelKey: o.GetName()})
}

func (c *Controller) nodeClaimsOfClass(ctx context.Context, o client.Object) []reconcile.Request {
	return c.requests(ctx, client.MatchingFields{index.NodeClaimNodeClassName: o.GetName()})
}

func (c *Controller) requests(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	var list karpv1.NodeClaimList
	if err := c.kubeClient.List(ctx, &list, opts...); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// requeueIn is a result that requeues after d (at least a millisecond, so
// a deadline that is exactly now still requeues).
func requeueIn(d time.Duration) reconcile.Result {
	return reconcile.Result{RequeueAfter: max(d, time.Millisecond)}
}
