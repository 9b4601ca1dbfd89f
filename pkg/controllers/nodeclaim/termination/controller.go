package termination

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/index"
	"github.com/karp-autoscaler/karp/pkg/metrics"
)

const (
	maxConcurrentReconciles = 100
	// instanceRecheck is how soon an instance still shutting down is asked about again.
	instanceRecheck = 5 * time.Second
	// nodeRecheck backs up the Node watch while Nodes are going away.
	nodeRecheck = 5 * time.Second
)

// Event reasons.
const (
	// ReasonTerminated is published when a NodeClaim is let go.
	ReasonTerminated = "Terminated"
	// ReasonTerminationGracePeriodExpiring is published when a deleting
	// NodeClaim's termination deadline is set.
	ReasonTerminationGracePeriodExpiring = "TerminationGracePeriodExpiring"
)

// step is one stage of finalization. done=false stops the pass (with the
// result telling when to come back).
type step func(ctx context.Context, nodeClaim *karpv1.NodeClaim) (done bool, res reconcile.Result, err error)

// Controller finalizes NodeClaims.
type Controller struct {
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	clock         clock.Clock
	recorder      events.EventRecorder
	steps         []step
}

var _ reconcile.ObjectReconciler[*karpv1.NodeClaim] = (*Controller)(nil)

// NewController builds the termination controller.
func NewController(kubeClient client.Client, cp cloudprovider.CloudProvider, clk clock.Clock, recorder events.EventRecorder) *Controller {
	c := &Controller{kubeClient: kubeClient, cloudProvider: cp, clock: clk, recorder: recorder}
	// Steps, in order.
	c.steps = []step{
		// Stamp the termination deadline (deletion + terminationGracePeriod)
		// the Node's drain works against.
		c.stampDeadline,
		// Delete the Nodes with the NodeClaim's providerID and wait until
		// they are gone: the node termination controller drains each one
		// and releases its finalizer.
		c.terminateNodes,
		// Terminate the instance and wait until the provider says it is gone.
		c.terminateInstance,
	}
	return c
}

// Name is the controller's name.
func (c *Controller) Name() string { return "nodeclaim.termination" }

// Register watches NodeClaims and their Nodes.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	if err := metrics.Register(crmetrics.Registry, TerminationDurationSeconds, InstanceTerminationDurationSeconds); err != nil {
		return err
	}
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&karpv1.NodeClaim{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(index.NodeClaimRequestsForNode(c.kubeClient)), builder.WithPredicates(nodeGoing)).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles}).
		Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;delete

// Reconcile finalizes a deleting NodeClaim, or deletes a live one whose
// Node is being deleted.
func (c *Controller) Reconcile(ctx context.Context, nodeClaim *karpv1.NodeClaim) (reconcile.Result, error) {
	ctx = metrics.WithController(ctx, c.Name())
	if nodeClaim.DeletionTimestamp.IsZero() {
		if !cloudprovider.IsManaged(nodeClaim, c.cloudProvider, c.kubeClient.Scheme()) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, c.followNodeDeletion(ctx, nodeClaim)
	}
	// A deleting NodeClaim carrying karp's finalizer is karp's to finish,
	// whatever its NodeClass.
	if !controllerutil.ContainsFinalizer(nodeClaim, karpv1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	for _, s := range c.steps {
		done, res, err := s(ctx, nodeClaim)
		if err != nil {
			// An error is retried with backoff; a requeue beside it would
			// be dropped.
			return reconcile.Result{}, err
		}
		if !done {
			return res, nil
		}
	}
	return reconcile.Result{}, c.removeFinalizer(ctx, nodeClaim)
}

// followNodeDeletion deletes the NodeClaim when one of its Nodes is being
// deleted: the user asked for the node to go, and the instance with it.
func (c *Controller) followNodeDeletion(ctx context.Context, nodeClaim *karpv1.NodeClaim) error {
	nodes, err := c.nodes(ctx, nodeClaim)
	if err != nil {
		return err
	}
	for i := range nodes {
		node := &nodes[i]
		if !node.DeletionTimestamp.IsZero() && controllerutil.ContainsFinalizer(node, karpv1.TerminationFinalizer) {
			log.FromContext(ctx).Info("deleting nodeclaim: its node is being deleted", "Node", klog.KObj(node))
			if err := c.kubeClient.Delete(ctx, nodeClaim); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting nodeclaim: %w", err)
			}
			return nil
		}
	}
	return nil
}

// terminateNodes deletes the NodeClaim's Nodes and waits until they are gone.
func (c *Controller) terminateNodes(ctx context.Context, nodeClaim *karpv1.NodeClaim) (bool, reconcile.Result, error) {
	nodes, err := c.nodes(ctx, nodeClaim)
	if err != nil {
		return false, reconcile.Result{}, err
	}
	var errs []error
	for i := range nodes {
		errs = append(errs, c.terminateNode(ctx, &nodes[i]))
	}
	if err := errors.Join(errs...); err != nil {
		return false, reconcile.Result{}, err
	}
	if len(nodes) > 0 {
		// The Node watch brings us back once they are gone.
		return false, reconcile.Result{RequeueAfter: nodeRecheck}, nil
	}
	return true, reconcile.Result{}, nil
}

func (c *Controller) terminateNode(ctx context.Context, node *corev1.Node) error {
	if !node.DeletionTimestamp.IsZero() {
		return nil
	}
	if err := c.kubeClient.Delete(ctx, node); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("deleting node %s: %w", node.Name, err))
	}
	log.FromContext(ctx).Info("deleting node", "Node", klog.KObj(node))
	return nil
}

// stampDeadline records, once, when the node must be gone: the deletion
// time plus the NodeClaim's terminationGracePeriod. Past it, the drain
// deletes pods whatever their PodDisruptionBudgets and annotations say.
func (c *Controller) stampDeadline(ctx context.Context, nodeClaim *karpv1.NodeClaim) (bool, reconcile.Result, error) {
	if nodeClaim.Spec.TerminationGracePeriod == nil {
		return true, reconcile.Result{}, nil
	}
	if _, ok := nodeClaim.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		return true, reconcile.Result{}, nil
	}
	deadline := nodeClaim.DeletionTimestamp.Add(nodeClaim.Spec.TerminationGracePeriod.Duration).UTC().Format(time.RFC3339)
	stored := nodeClaim.DeepCopy()
	if nodeClaim.Annotations == nil {
		nodeClaim.Annotations = map[string]string{}
	}
	nodeClaim.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey] = deadline
	if err := c.kubeClient.Patch(ctx, nodeClaim, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("stamping termination deadline: %w", err))
	}
	c.recorder.Eventf(nodeClaim, nil, corev1.EventTypeWarning, ReasonTerminationGracePeriodExpiring, "Terminate",
		"All pods will be deleted by %s", deadline)
	return true, reconcile.Result{}, nil
}

// terminateInstance deletes the instance and confirms it is gone.
func (c *Controller) terminateInstance(ctx context.Context, nodeClaim *karpv1.NodeClaim) (bool, reconcile.Result, error) {
	if nodeClaim.Status.ProviderID == "" {
		// Never launched (or the launch was never recorded: garbage
		// collection reclaims such an instance once it has no NodeClaim).
		return true, reconcile.Result{}, nil
	}
	if err := c.cloudProvider.Delete(ctx, nodeClaim); err != nil {
		if cloudprovider.IsNodeClaimNotFoundError(err) {
			return true, reconcile.Result{}, nil
		}
		return false, reconcile.Result{}, fmt.Errorf("terminating instance: %w", err)
	}
	if _, err := c.cloudProvider.Get(ctx, nodeClaim.Status.ProviderID); cloudprovider.IsNodeClaimNotFoundError(err) {
		return true, reconcile.Result{}, nil
	}
	if err := c.markInstanceTerminating(ctx, nodeClaim); err != nil {
		return false, reconcile.Result{}, err
	}
	return false, reconcile.Result{RequeueAfter: instanceRecheck}, nil
}

func (c *Controller) markInstanceTerminating(ctx context.Context, nodeClaim *karpv1.NodeClaim) error {
	stored := nodeClaim.DeepCopy()
	nodeClaim.StatusConditions().WithClock(c.clock).SetTrue(karpv1.ConditionTypeInstanceTerminating)
	if equality.Semantic.DeepEqual(stored.Status, nodeClaim.Status) {
		return nil
	}
	if err := c.kubeClient.Status().Patch(ctx, nodeClaim, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("patching nodeclaim status: %w", err))
	}
	return nil
}

func (c *Controller) removeFinalizer(ctx context.Context, nodeClaim *karpv1.NodeClaim) error {
	stored := nodeClaim.DeepCopy()
	controllerutil.RemoveFinalizer(nodeClaim, karpv1.TerminationFinalizer)
	if err := c.kubeClient.Patch(ctx, nodeClaim, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("removing nodeclaim finalizer: %w", err))
	}
	metrics.NodeClaimsTerminatedTotal.WithLabelValues(nodeClaim.Labels[karpv1.NodePoolLabelKey],
		nodeClaim.Labels[karpv1.CapacityTypeLabelKey], nodeClaim.Labels[corev1.LabelTopologyZone]).Inc()
	c.observeTermination(nodeClaim)
	log.FromContext(ctx).Info("deleted nodeclaim", "providerID", nodeClaim.Status.ProviderID)
	c.recorder.Eventf(nodeClaim, nil, corev1.EventTypeNormal, ReasonTerminated, "Terminate", "Instance and Node are gone")
	return nil
}

// observeTermination records how long the NodeClaim and its instance took
// to terminate.
func (c *Controller) observeTermination(nodeClaim *karpv1.NodeClaim) {
	pool := nodeClaim.Labels[karpv1.NodePoolLabelKey]
	if nodeClaim.DeletionTimestamp != nil {
		TerminationDurationSeconds.WithLabelValues(pool).Observe(c.clock.Since(nodeClaim.DeletionTimestamp.Time).Seconds())
	}
	if cond := nodeClaim.StatusConditions().Get(karpv1.ConditionTypeInstanceTerminating); cond != nil && cond.Status == metav1.ConditionTrue {
		InstanceTerminationDurationSeconds.WithLabelValues(pool).Observe(c.clock.Since(cond.LastTransitionTime.Time).Seconds())
	}
}

func (c *Controller) nodes(ctx context.Context, nodeClaim *karpv1.NodeClaim) ([]corev1.Node, error) {
	if nodeClaim.Status.ProviderID == "" {
		return nil, nil
	}
	var list corev1.NodeList
	if err := c.kubeClient.List(ctx, &list, client.MatchingFields{index.NodeProviderID: nodeClaim.Status.ProviderID}); err != nil {
		return nil, fmt.Errorf("listing nodes by providerID: %w", err)
	}
	return list.Items, nil
}

// nodeGoing passes only Node events that matter here: deletion started or done.
var nodeGoing = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return !e.Object.GetDeletionTimestamp().IsZero() },
	UpdateFunc:  func(e event.UpdateEvent) bool { return !e.ObjectNew.GetDeletionTimestamp().IsZero() },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return false },
}
