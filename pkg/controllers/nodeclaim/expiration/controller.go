package expiration

import (
	"context"
	"fmt"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/metrics"
)

// Controller deletes expired NodeClaims, and those past their replace-by
// deadline.
type Controller struct {
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	clock         clock.Clock
}

var _ reconcile.ObjectReconciler[*karpv1.NodeClaim] = (*Controller)(nil)

// NewController builds the expiration controller.
func NewController(kubeClient client.Client, cp cloudprovider.CloudProvider, clk clock.Clock) *Controller {
	return &Controller{kubeClient: kubeClient, cloudProvider: cp, clock: clk}
}

// Name is the controller's name.
func (c *Controller) Name() string { return "nodeclaim.expiration" }

// Register watches NodeClaims.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&karpv1.NodeClaim{}).
		Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch

// Reconcile deletes the NodeClaim once creation+expireAfter has passed, or
// its replace-by deadline (karpv1.ReplaceByAnnotationKey: the disruption
// controller had until then to replace it first), and otherwise requeues
// for the earlier of the two.
func (c *Controller) Reconcile(ctx context.Context, nodeClaim *karpv1.NodeClaim) (reconcile.Result, error) {
	if !nodeClaim.DeletionTimestamp.IsZero() || !cloudprovider.IsManaged(nodeClaim, c.cloudProvider, c.kubeClient.Scheme()) {
		return reconcile.Result{}, nil
	}
	now := c.clock.Now()
	var wait time.Duration
	if by, why, ok := nodeClaim.ReplaceBy(); ok {
		if !now.Before(by) {
			return reconcile.Result{}, c.delete(ctx, nodeClaim, why, "replaceBy", by.UTC().Format(time.RFC3339))
		}
		wait = by.Sub(now)
	}
	if !nodeClaim.Spec.ExpireAfter.IsNever() {
		expireAfter := *nodeClaim.Spec.ExpireAfter.Duration
		expiry := nodeClaim.CreationTimestamp.Add(expireAfter)
		if !now.Before(expiry) {
			return reconcile.Result{}, c.delete(ctx, nodeClaim, metrics.ReasonExpired, "expireAfter", expireAfter.String())
		}
		if left := expiry.Sub(now); wait == 0 || left < wait {
			wait = left
		}
	}
	return reconcile.Result{RequeueAfter: wait}, nil
}

// delete deletes the NodeClaim, forcefully, for reason; detail names the
// deadline in the log.
func (c *Controller) delete(ctx context.Context, nodeClaim *karpv1.NodeClaim, reason, detailKey, detail string) error {
	// Delete with a precondition on the UID so a NodeClaim re-created under
	// the same name is not taken for this one.
	if err := c.kubeClient.Delete(ctx, nodeClaim, client.Preconditions{UID: &nodeClaim.UID}); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("deleting %s nodeclaim: %w", reason, err))
	}
	log.FromContext(ctx).Info("disrupting nodeclaim", "reason", reason, detailKey, detail,
		"Node", klog.KRef("", nodeClaim.Status.NodeName))
	metrics.NodeClaimsDisruptedTotal.WithLabelValues(reason, nodeClaim.Labels[karpv1.NodePoolLabelKey],
		nodeClaim.Labels[karpv1.CapacityTypeLabelKey], c.consolidationPolicy(ctx, nodeClaim), metrics.TerminationModeForceful).Inc()
	return nil
}

// consolidationPolicy is the NodeClaim's NodePool's policy, for the metric
// label; empty for standalone NodeClaims or a deleted pool.
func (c *Controller) consolidationPolicy(ctx context.Context, nodeClaim *karpv1.NodeClaim) string {
	name := nodeClaim.Labels[karpv1.NodePoolLabelKey]
	if name == "" {
		return ""
	}
	nodePool := &karpv1.NodePool{}
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: name}, nodePool); err != nil {
		return ""
	}
	return string(nodePool.Spec.Disruption.ConsolidationPolicy)
}
