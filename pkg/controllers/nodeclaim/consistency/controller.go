package consistency

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
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
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/index"
)

// ScanPeriod is how often a NodeClaim is checked (upstream's): issues
// such as a short Node do not change quickly, and each check lists the
// Node's pods and the cluster's PodDisruptionBudgets.
const ScanPeriod = 10 * time.Minute

// Controller checks launched NodeClaims against their Nodes.
type Controller struct {
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	clock         clock.Clock
	recorder      events.EventRecorder

	mu sync.Mutex
	// scanned is when each NodeClaim was last checked.
	scanned map[types.UID]time.Time
}

var _ reconcile.ObjectReconciler[*karpv1.NodeClaim] = (*Controller)(nil)

// NewController builds the consistency controller.
func NewController(kubeClient client.Client, cloudProvider cloudprovider.CloudProvider, clk clock.Clock, recorder events.EventRecorder) *Controller {
	return &Controller{kubeClient: kubeClient, cloudProvider: cloudProvider, clock: clk, recorder: recorder, scanned: map[types.UID]time.Time{}}
}

// Name is the controller's name.
func (c *Controller) Name() string { return "nodeclaim.consistency" }

// Register watches NodeClaims and, through their providerID, their Nodes.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&karpv1.NodeClaim{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(index.NodeClaimRequestsForNode(c.kubeClient)),
			builder.WithPredicates(capacityChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=nodes;pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile checks a launched NodeClaim with a Node at most once per
// ScanPeriod, reports each issue and records the outcome in
// ConsistentStateFound.
func (c *Controller) Reconcile(ctx context.Context, nodeClaim *karpv1.NodeClaim) (reconcile.Result, error) {
	if nodeClaim.Status.ProviderID == "" || !cloudprovider.IsManaged(nodeClaim, c.cloudProvider, c.kubeClient.Scheme()) {
		return reconcile.Result{}, nil
	}
	if !nodeClaim.StatusConditions().IsTrue(karpv1.ConditionTypeInitialized) && nodeClaim.DeletionTimestamp.IsZero() {
		// Nothing to check yet. Upstream's first check writes
		// ConsistentStateFound=True as soon as the Node registers; karp's
		// waits for initialization (the update brings the NodeClaim back),
		// so it does not compete with the lifecycle's status writes while
		// the Node registers and starts.
		return reconcile.Result{}, nil
	}
	if wait := c.untilDue(nodeClaim.UID); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	// 1. Gather: the Node (none yet, or several: the lifecycle's concern).
	node, err := c.nodeFor(ctx, nodeClaim)
	if err != nil || node == nil {
		return reconcile.Result{}, err
	}
	issues := nodeShapeIssues(nodeClaim, node)
	if !nodeClaim.DeletionTimestamp.IsZero() {
		pods, pdbs, err := c.drainState(ctx, node)
		if err != nil {
			return reconcile.Result{}, err
		}
		issues = append(issues, terminationIssues(nodeClaim, pods, pdbs)...)
	}
	// 2. Report, and record the outcome. Upstream records one event per
	// issue; karp joins the issues of one check into one event, so they
	// are read together.
	for _, issue := range issues {
		log.FromContext(ctx).Error(errors.New(issue), "consistency error")
	}
	if len(issues) > 0 {
		c.recorder.Eventf(nodeClaim, node, corev1.EventTypeWarning, ReasonFailedConsistencyCheck, "CheckConsistency", "%s", strings.Join(issues, "; "))
	}
	if err := c.setCondition(ctx, nodeClaim, len(issues) == 0); err != nil {
		// Not marked scanned: the retry checks again and writes the outcome.
		return reconcile.Result{}, err
	}
	c.markScanned(nodeClaim.UID)
	return reconcile.Result{RequeueAfter: ScanPeriod}, nil
}

// capacityChanged passes Node creations and capacity changes (a registered
// Node is checked at once, its next check is timed by ScanPeriod), not the
// kubelet's status heartbeats.
var capacityChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*corev1.Node)
		after, ok2 := e.ObjectNew.(*corev1.Node)
		return !ok1 || !ok2 || !equality.Semantic.DeepEqual(before.Status.Capacity, after.Status.Capacity)
	},
}

// untilDue returns how long until the NodeClaim is due for a check; 0 when
// it is due.
func (c *Controller) untilDue(uid types.UID) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	last, ok := c.scanned[uid]
	if !ok {
		return 0
	}
	return max(0, ScanPeriod-c.clock.Since(last))
}

// markScanned records a check now and forgets NodeClaims not checked for
// two periods (deleted ones).
func (c *Controller) markScanned(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	for id, at := range c.scanned {
		if now.Sub(at) > 2*ScanPeriod {
			delete(c.scanned, id)
		}
	}
	c.scanned[uid] = now
}

// nodeFor returns the NodeClaim's Node, or nil when there is none or more
// than one.
func (c *Controller) nodeFor(ctx context.Context, nodeClaim *karpv1.NodeClaim) (*corev1.Node, error) {
	var nodes corev1.NodeList
	if err := c.kubeClient.List(ctx, &nodes, client.MatchingFields{index.NodeProviderID: nodeClaim.Status.ProviderID}); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	if len(nodes.Items) != 1 {
		return nil, nil
	}
	return &nodes.Items[0], nil
}

// drainState lists the Node's pods and the cluster's PodDisruptionBudgets.
func (c *Controller) drainState(ctx context.Context, node *corev1.Node) ([]corev1.Pod, []policyv1.PodDisruptionBudget, error) {
	var pods corev1.PodList
	if err := c.kubeClient.List(ctx, &pods, client.MatchingFields{index.PodNodeName: node.Name}); err != nil {
		return nil, nil, fmt.Errorf("listing pods: %w", err)
	}
	var pdbs policyv1.PodDisruptionBudgetList
	if err := c.kubeClient.List(ctx, &pdbs); err != nil {
		return nil, nil, fmt.Errorf("listing poddisruptionbudgets: %w", err)
	}
	return pods.Items, pdbs.Items, nil
}

// setCondition writes ConsistentStateFound when it changes.
func (c *Controller) setCondition(ctx context.Context, nodeClaim *karpv1.NodeClaim, consistent bool) error {
	stored := nodeClaim.DeepCopy()
	conditions := nodeClaim.StatusConditions().WithClock(c.clock)
	if consistent {
		conditions.SetTrue(karpv1.ConditionTypeConsistentStateFound)
	} else {
		conditions.SetFalse(karpv1.ConditionTypeConsistentStateFound, reasonConsistencyCheckFailed, messageConsistencyCheckFailed)
	}
	if equality.Semantic.DeepEqual(stored.Status, nodeClaim.Status) {
		return nil
	}
	if err := c.kubeClient.Status().Patch(ctx, nodeClaim, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("patching nodeclaim status: %w", err))
	}
	return nil
}
