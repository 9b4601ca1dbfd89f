package health

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
	"github.com/karp-autoscaler/karp/pkg/interruption"
	"github.com/karp-autoscaler/karp/pkg/metrics"
)

const (
	// MaxUnhealthyFraction is the largest share of a pool's nodes that may
	// be unhealthy for repair to proceed (rounded up).
	MaxUnhealthyFraction = 0.2
	// BlockedRetry is how long a blocked repair waits before re-checking.
	BlockedRetry = 5 * time.Minute
)

// Controller replaces unhealthy nodes.
type Controller struct {
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	clock         clock.Clock
	recorder      events.EventRecorder
	// toleration, when positive, replaces every policy's toleration.
	toleration time.Duration
	// replaceFirst marks the NodeClaim for replacement ahead of its
	// deletion (--replace-first) instead of deleting it at once.
	replaceFirst bool
}

// WithReplaceFirst makes a repair launch the node's replacement first:
// the NodeClaim is marked to be deleted within twice the pool's observed
// launch time (at least repairLead) and the disruption controller deletes
// it as soon as the replacement is initialized.
func WithReplaceFirst(on bool) Option {
	return func(c *Controller) { c.replaceFirst = on }
}

// Bounds of the time a repair gives the replacement (WithReplaceFirst).
const (
	minRepairLead = 30 * time.Second
	maxRepairLead = 5 * time.Minute
)

// Option configures the controller.
type Option func(*Controller)

// WithToleration replaces the toleration of every repair policy (tests and
// local clusters shorten kwok's 10 minutes); zero keeps the provider's.
func WithToleration(d time.Duration) Option {
	return func(c *Controller) { c.toleration = d }
}

var _ reconcile.ObjectReconciler[*corev1.Node] = (*Controller)(nil)

// NewController builds the node repair controller.
func NewController(kubeClient client.Client, cp cloudprovider.CloudProvider, clk clock.Clock, recorder events.EventRecorder, opts ...Option) *Controller {
	c := &Controller{kubeClient: kubeClient, cloudProvider: cp, clock: clk, recorder: recorder}
	for _, opt := range opts {
		opt(c)
	}
	return c
}

// Name is the controller's name.
func (c *Controller) Name() string { return "node.health" }

// Register watches Nodes and registers the repair metric.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	if err := metrics.Register(crmetrics.Registry, UnhealthyDisruptedTotal); err != nil {
		return err
	}
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&corev1.Node{}).
		// A node that recovers, joins or leaves changes its pool's unhealthy
		// share: re-check the pool's blocked nodes at once instead of after
		// BlockedRetry.
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(c.unhealthyPeers), builder.WithPredicates(readinessChanged)).
		Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;patch;delete

// Reconcile deletes the Node's NodeClaim once a repair policy's toleration
// has passed and the pool's unhealthy share allows it.
func (c *Controller) Reconcile(ctx context.Context, node *corev1.Node) (reconcile.Result, error) {
	policies := c.policies()
	if len(policies) == 0 || !node.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	nodeClaim, err := index.NodeClaimForProviderID(ctx, c.kubeClient, node.Spec.ProviderID)
	if err != nil || nodeClaim == nil || !nodeClaim.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, err
	}
	now := c.clock.Now()
	cond, wait := dueCondition(node, policies, now)
	if cond == nil {
		// Healthy, or unhealthy for less than the toleration.
		if wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
		return reconcile.Result{}, nil
	}
	pool := nodeClaim.Labels[karpv1.NodePoolLabelKey]
	unhealthy, total, err := c.unhealthyShare(ctx, pool, policies)
	if err != nil {
		return reconcile.Result{}, err
	}
	if allowed := int(math.Ceil(MaxUnhealthyFraction * float64(total))); unhealthy > allowed {
		c.recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonNodeRepairBlocked, "Repair",
			"Node repair blocked: %d of %d nodes are unhealthy, more than %d%%", unhealthy, total, int(MaxUnhealthyFraction*100))
		return reconcile.Result{RequeueAfter: BlockedRetry}, nil
	}
	return reconcile.Result{}, c.repair(ctx, node, nodeClaim, cond, now)
}

// policies are the provider's repair policies with the toleration override.
func (c *Controller) policies() []cloudprovider.RepairPolicy {
	policies := slices.Clone(c.cloudProvider.RepairPolicies())
	if c.toleration > 0 {
		for i := range policies {
			policies[i].TolerationDuration = c.toleration
		}
	}
	return policies
}

// repair deletes the NodeClaim with a termination deadline of now, so the
// drain does not wait on a node that cannot run its pods anyway. With
// replaceFirst it marks the NodeClaim instead, to be deleted (with that
// deadline) by the time a replacement can launch, or as soon as the
// disruption controller has one initialized.
func (c *Controller) repair(ctx context.Context, node *corev1.Node, nodeClaim *karpv1.NodeClaim, cond *corev1.NodeCondition, now time.Time) error {
	pool, capacityType := nodeClaim.Labels[karpv1.NodePoolLabelKey], nodeClaim.Labels[karpv1.CapacityTypeLabelKey]
	if c.replaceFirst && pool != "" && nodeClaim.StatusConditions().IsTrue(karpv1.ConditionTypeInitialized) {
		if _, _, marked := nodeClaim.ReplaceBy(); marked {
			return nil // the deadline controller deletes it when due
		}
		launch, err := interruption.ObservedLaunchTime(ctx, c.kubeClient, pool)
		if err != nil {
			return err
		}
		by := now.Add(interruption.LaunchLead(launch, interruption.LaunchSlack, minRepairLead, maxRepairLead))
		marked, err := interruption.ReplaceFirst(ctx, c.kubeClient, nodeClaim, by, by, metrics.ReasonUnhealthy)
		if err != nil || !marked {
			return err
		}
		c.recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonNodeRepair, "Repair",
			"Replacing node: condition %s has been %s since %s; launching its replacement first, deleting the node by %s",
			cond.Type, cond.Status, cond.LastTransitionTime.UTC().Format(time.RFC3339), by.UTC().Format(time.RFC3339))
		log.FromContext(ctx).Info("replacing unhealthy nodeclaim first", "condition", string(cond.Type),
			"NodeClaim", klog.KObj(nodeClaim), "replaceBy", by.UTC().Format(time.RFC3339))
		UnhealthyDisruptedTotal.WithLabelValues(string(cond.Type), pool, capacityType, nodeClaim.Status.ImageID).Inc()
		return nil
	}
	stored := nodeClaim.DeepCopy()
	if nodeClaim.Annotations == nil {
		nodeClaim.Annotations = map[string]string{}
	}
	nodeClaim.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey] = now.UTC().Format(time.RFC3339)
	if err := c.kubeClient.Patch(ctx, nodeClaim, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("annotating termination timestamp: %w", err))
	}
	if err := c.kubeClient.Delete(ctx, nodeClaim, client.Preconditions{UID: &nodeClaim.UID}); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("deleting unhealthy nodeclaim: %w", err))
	}
	c.recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonNodeRepair, "Repair",
		"Replacing node: condition %s has been %s since %s", cond.Type, cond.Status, cond.LastTransitionTime.UTC().Format(time.RFC3339))
	log.FromContext(ctx).Info("disrupting nodeclaim", "reason", metrics.ReasonUnhealthy, "condition", string(cond.Type),
		"NodeClaim", klog.KObj(nodeClaim))
	UnhealthyDisruptedTotal.WithLabelValues(string(cond.Type), pool, capacityType, nodeClaim.Status.ImageID).Inc()
	metrics.NodeClaimsDisruptedTotal.WithLabelValues(metrics.ReasonUnhealthy, pool, capacityType, "", metrics.TerminationModeForceful).Inc()
	return nil
}

// readinessChanged passes Node creations, deletions and Ready changes.
var readinessChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		oldNode, ok1 := e.ObjectOld.(*corev1.Node)
		newNode, ok2 := e.ObjectNew.(*corev1.Node)
		return ok1 && ok2 && readyStatus(oldNode) != readyStatus(newNode)
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
}

func readyStatus(node *corev1.Node) corev1.ConditionStatus {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status
		}
	}
	return ""
}

// unhealthyPeers are the unhealthy Nodes of the node's pool.
func (c *Controller) unhealthyPeers(ctx context.Context, o client.Object) []reconcile.Request {
	pool := o.GetLabels()[karpv1.NodePoolLabelKey]
	if pool == "" {
		return nil
	}
	var list corev1.NodeList
	if err := c.kubeClient.List(ctx, &list, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}); err != nil {
		return nil
	}
	policies := c.policies()
	var out []reconcile.Request
	for i := range list.Items {
		for _, policy := range policies {
			if matching(&list.Items[i], policy) != nil {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
				break
			}
		}
	}
	return out
}

// dueCondition returns the first Node condition that has matched a policy
// for at least its toleration; otherwise how long until the earliest
// matching condition is due (zero when none matches).
func dueCondition(node *corev1.Node, policies []cloudprovider.RepairPolicy, now time.Time) (*corev1.NodeCondition, time.Duration) {
	var wait time.Duration
	for _, policy := range policies {
		cond := matching(node, policy)
		if cond == nil {
			continue
		}
		due := cond.LastTransitionTime.Add(policy.TolerationDuration)
		if !now.Before(due) {
			return cond, 0
		}
		if left := due.Sub(now); wait == 0 || left < wait {
			wait = left
		}
	}
	return nil, wait
}

func matching(node *corev1.Node, policy cloudprovider.RepairPolicy) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		cond := &node.Status.Conditions[i]
		if cond.Type == policy.ConditionType && cond.Status == policy.ConditionStatus {
			return cond
		}
	}
	return nil
}

// unhealthyShare counts the pool's Nodes matching any policy now (however
// long) and all of its Nodes; an empty pool means every Node.
func (c *Controller) unhealthyShare(ctx context.Context, pool string, policies []cloudprovider.RepairPolicy) (int, int, error) {
	var list corev1.NodeList
	var opts []client.ListOption
	if pool != "" {
		opts = append(opts, client.MatchingLabels{karpv1.NodePoolLabelKey: pool})
	}
	if err := c.kubeClient.List(ctx, &list, opts...); err != nil {
		return 0, 0, fmt.Errorf("listing nodes: %w", err)
	}
	unhealthy := 0
	for i := range list.Items {
		for _, policy := range policies {
			if matching(&list.Items[i], policy) != nil {
				unhealthy++
				break
			}
		}
	}
	return unhealthy, len(list.Items), nil
}
