package termination

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
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
	// drainRecheck is how soon a draining node is looked at again.
	drainRecheck = time.Second
	// volumeRecheck is how soon volume attachments are looked at again.
	volumeRecheck = time.Second
	// instanceRecheck is how soon an instance still shutting down is asked about again.
	instanceRecheck = 5 * time.Second
)

// Controller finalizes deleting Nodes that carry karp's finalizer.
type Controller struct {
	kubeClient    client.Client
	apiReader     client.Reader
	cloudProvider cloudprovider.CloudProvider
	clock         clock.Clock
	recorder      events.EventRecorder
	queue         *Queue
	dedupe        *dedupe
}

var _ reconcile.ObjectReconciler[*corev1.Node] = (*Controller)(nil)

// NewController builds the node termination controller. apiReader reads
// pods and volume attachments straight from the API server, so a drain
// never acts on a stale cache; queue performs the evictions.
func NewController(kubeClient client.Client, apiReader client.Reader, cp cloudprovider.CloudProvider, clk clock.Clock,
	recorder events.EventRecorder, queue *Queue) *Controller {
	return &Controller{kubeClient: kubeClient, apiReader: apiReader, cloudProvider: cp, clock: clk,
		recorder: recorder, queue: queue, dedupe: newDedupe()}
}

// Name is the controller's name.
func (c *Controller) Name() string { return "node.termination" }

// Register adds the controller, its eviction queue and its metrics.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	if err := metrics.Register(crmetrics.Registry, collectors()...); err != nil {
		return fmt.Errorf("registering termination metrics: %w", err)
	}
	if err := mgr.Add(c.queue); err != nil {
		return fmt.Errorf("adding the eviction queue: %w", err)
	}
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&corev1.Node{}, builder.WithPredicates(finalizing)).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles}).
		Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get
// +kubebuilder:rbac:groups=storage.k8s.io,resources=volumeattachments,verbs=list
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/status,verbs=patch

// Reconcile moves a deleting Node through drain, volume detachment and
// instance termination, then releases it.
func (c *Controller) Reconcile(ctx context.Context, node *corev1.Node) (reconcile.Result, error) {
	ctx = metrics.WithController(ctx, c.Name())
	if node.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(node, karpv1.TerminationFinalizer) {
		c.dedupe.forget(node.UID)
		return reconcile.Result{}, nil
	}
	nodeClaim, err := index.NodeClaimForProviderID(ctx, c.kubeClient, node.Spec.ProviderID)
	if err != nil {
		return reconcile.Result{}, err
	}
	if nodeClaim != nil && nodeClaim.DeletionTimestamp.IsZero() {
		// The Node was deleted directly: the NodeClaim (and instance) go too.
		if err := c.kubeClient.Delete(ctx, nodeClaim); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("deleting nodeclaim: %w", err)
		}
		// Read it back, so this pass's condition patch applies to the
		// deleting version.
		if err := c.apiReader.Get(ctx, client.ObjectKeyFromObject(nodeClaim), nodeClaim); err != nil {
			if !apierrors.IsNotFound(err) {
				return reconcile.Result{}, fmt.Errorf("getting nodeclaim: %w", err)
			}
			nodeClaim = nil
		}
	}
	if gone, err := c.instanceGoneWhileNotReady(ctx, node); err != nil || gone {
		if err != nil {
			return reconcile.Result{}, err
		}
		if err := c.deleteStrandedPods(ctx, node); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, c.release(ctx, node, nodeClaim)
	}
	if err := c.taint(ctx, node); err != nil {
		return reconcile.Result{}, err
	}
	p := &pass{node: node, nodeClaim: nodeClaim, now: c.clock.Now(), deadline: deadline(nodeClaim)}
	if nodeClaim != nil {
		p.before = nodeClaim.DeepCopy()
	}
	res, done, err := c.run(ctx, p)
	if perr := c.patchNodeClaimStatus(ctx, p); perr != nil {
		err = errors.Join(err, perr)
	}
	// controller-runtime drops a requeue returned with an error (and logs
	// a warning for it): an error is retried with backoff instead.
	if err != nil {
		return reconcile.Result{}, err
	}
	if !done {
		return res, nil
	}
	return reconcile.Result{}, c.release(ctx, node, nodeClaim)
}

// pass is what one reconcile of a deleting Node knows.
type pass struct {
	node *corev1.Node
	// nodeClaim is the Node's NodeClaim (nil when it has none); its
	// conditions are updated in memory and patched once at the end.
	nodeClaim *karpv1.NodeClaim
	before    *karpv1.NodeClaim
	now       time.Time
	// deadline is when the node must be gone (zero: no terminationGracePeriod).
	deadline time.Time
	// pods are the pods on the node, as the drain read them.
	pods []corev1.Pod
}

func (p *pass) deadlinePassed() bool { return !p.deadline.IsZero() && !p.now.Before(p.deadline) }

// run runs the stages in order; done reports that all of them finished.
func (c *Controller) run(ctx context.Context, p *pass) (reconcile.Result, bool, error) {
	stages := []func(context.Context, *pass) (reconcile.Result, bool, error){
		// Evict (or, past the deadline, delete) the pods.
		c.drain,
		// Wait for the drained pods' volumes to detach.
		c.awaitVolumeDetachment,
		// Delete the instance and wait until it is gone.
		c.awaitInstanceTermination,
	}
	for _, stage := range stages {
		res, done, err := stage(ctx, p)
		if err != nil || !done {
			return res, false, err
		}
	}
	return reconcile.Result{}, true, nil
}

// instanceGoneWhileNotReady reports whether a NotReady Node's instance no
// longer exists: nothing can run there, so there is nothing to drain.
func (c *Controller) instanceGoneWhileNotReady(ctx context.Context, node *corev1.Node) (bool, error) {
	if nodeReady(node) || node.Spec.ProviderID == "" {
		return false, nil
	}
	_, err := c.cloudProvider.Get(ctx, node.Spec.ProviderID)
	if cloudprovider.IsNodeClaimNotFoundError(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("getting instance: %w", err)
	}
	return false, nil
}

func nodeReady(node *corev1.Node) bool {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// taint adds the disrupted taint and the load balancer exclusion label.
func (c *Controller) taint(ctx context.Context, node *corev1.Node) error {
	stored := node.DeepCopy()
	if !hasDisruptedTaint(node) {
		node.Spec.Taints = append(node.Spec.Taints, karpv1.DisruptedNoScheduleTaint)
	}
	if node.Labels[karpv1.NodeExcludeFromLoadBalancersLabelKey] != "karpenter" {
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		node.Labels[karpv1.NodeExcludeFromLoadBalancersLabelKey] = "karpenter"
	}
	if equality.Semantic.DeepEqual(stored, node) {
		return nil
	}
	if err := c.kubeClient.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("tainting node: %w", err))
	}
	log.FromContext(ctx).Info("tainted node", "Node", klog.KObj(node), "taint", karpv1.DisruptedTaintKey)
	return nil
}

func hasDisruptedTaint(node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if karpv1.IsDisruptingTaint(t) {
			return true
		}
	}
	return false
}

// deadline reads the NodeClaim's termination deadline.
func deadline(nodeClaim *karpv1.NodeClaim) time.Time {
	if nodeClaim == nil {
		return time.Time{}
	}
	v, ok := nodeClaim.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]
	if !ok {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}
	}
	return t
}

// release removes the finalizer and records the node's end.
func (c *Controller) release(ctx context.Context, node *corev1.Node, nodeClaim *karpv1.NodeClaim) error {
	stored := node.DeepCopy()
	controllerutil.RemoveFinalizer(node, karpv1.TerminationFinalizer)
	// A strategic merge patch removes just this finalizer, whatever else
	// changed on the Node since it was read.
	if err := c.kubeClient.Patch(ctx, node, client.StrategicMergeFrom(stored)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("removing node finalizer: %w", err))
	}
	c.dedupe.forget(node.UID)
	nodePool := node.Labels[karpv1.NodePoolLabelKey]
	if nodePool == "" && nodeClaim != nil {
		nodePool = nodeClaim.Labels[karpv1.NodePoolLabelKey]
	}
	now := c.clock.Now()
	metrics.NodesTerminatedTotal.WithLabelValues(nodePool, node.Labels[corev1.LabelTopologyZone]).Inc()
	nodesTerminationDurationSeconds.WithLabelValues(nodePool).Observe(now.Sub(node.DeletionTimestamp.Time).Seconds())
	nodesLifetimeDurationSeconds.WithLabelValues(nodePool).Observe(now.Sub(node.CreationTimestamp.Time).Seconds())
	log.FromContext(ctx).Info("deleted node", "Node", klog.KObj(node))
	return nil
}

func (c *Controller) patchNodeClaimStatus(ctx context.Context, p *pass) error {
	if p.nodeClaim == nil || equality.Semantic.DeepEqual(p.before.Status, p.nodeClaim.Status) {
		return nil
	}
	err := c.kubeClient.Status().Patch(ctx, p.nodeClaim, client.MergeFromWithOptions(p.before, client.MergeFromWithOptimisticLock{}))
	return client.IgnoreNotFound(err)
}

// finalizing passes Nodes that are being deleted and carry karp's finalizer.
var finalizing = predicate.NewPredicateFuncs(func(o client.Object) bool {
	return !o.GetDeletionTimestamp().IsZero() && controllerutil.ContainsFinalizer(o, karpv1.TerminationFinalizer)
})
