package podevents

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/index"
)

// Dedupe is the least time between two writes of a NodeClaim's
// lastPodEventTime: a node receiving a burst of pods is written once.
const Dedupe = 10 * time.Second

// Controller updates NodeClaims' lastPodEventTime from their pods.
type Controller struct {
	kubeClient client.Client
	clock      clock.Clock
}

var _ reconcile.ObjectReconciler[*corev1.Pod] = (*Controller)(nil)

// NewController builds the pod-events controller.
func NewController(kubeClient client.Client, clk clock.Clock) *Controller {
	return &Controller{kubeClient: kubeClient, clock: clk}
}

// Name is the controller's name.
func (c *Controller) Name() string { return "nodeclaim.podevents" }

// Register watches bound pods.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	bound := predicate.NewPredicateFuncs(func(o client.Object) bool {
		pod, ok := o.(*corev1.Pod)
		return ok && pod.Spec.NodeName != ""
	})
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&corev1.Pod{}, builder.WithPredicates(bound, podEvent)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
}

// podEvent passes the pod updates that are events for its node: binding,
// the start of termination and reaching a terminal phase. Status updates
// in between (conditions, container states; several per pod as it
// starts) change nothing here and are dropped before they cost a
// reconcile.
var podEvent = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*corev1.Pod)
		after, ok2 := e.ObjectNew.(*corev1.Pod)
		if !ok1 || !ok2 {
			return true
		}
		return before.Spec.NodeName != after.Spec.NodeName ||
			(before.DeletionTimestamp == nil) != (after.DeletionTimestamp == nil) ||
			isTerminal(before) != isTerminal(after)
	},
}

func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// +kubebuilder:rbac:groups="",resources=pods;nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/status,verbs=patch

// Reconcile moves the pod's NodeClaim's lastPodEventTime forward to the
// pod's latest event, when that is more than Dedupe after the stored one.
func (c *Controller) Reconcile(ctx context.Context, pod *corev1.Pod) (reconcile.Result, error) {
	if pod.Spec.NodeName == "" {
		return reconcile.Result{}, nil
	}
	nodeClaim, err := c.nodeClaimOf(ctx, pod.Spec.NodeName)
	if err != nil || nodeClaim == nil {
		return reconcile.Result{}, err
	}
	at := EventTime(pod, c.clock.Now())
	if !at.After(nodeClaim.Status.LastPodEventTime.Add(Dedupe)) {
		return reconcile.Result{}, nil
	}
	stored := nodeClaim.DeepCopy()
	nodeClaim.Status.LastPodEventTime = metav1.NewTime(at)
	// No optimistic lock: the patch sets one field only this controller
	// writes, and a conflict with the lifecycle's status writes (frequent
	// while a node fills with pods) would only cost a retry.
	if err := c.kubeClient.Status().Patch(ctx, nodeClaim, client.MergeFrom(stored)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching lastPodEventTime: %w", err))
	}
	return reconcile.Result{}, nil
}

// nodeClaimOf returns the live NodeClaim of the named Node, or nil.
func (c *Controller) nodeClaimOf(ctx context.Context, nodeName string) (*karpv1.NodeClaim, error) {
	node := &corev1.Node{}
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: nodeName}, node, &client.GetOptions{UnsafeDisableDeepCopy: ptr.To(true)}); err != nil {
		return nil, client.IgnoreNotFound(fmt.Errorf("getting node: %w", err))
	}
	claims, err := index.NodeClaimsForProviderID(ctx, c.kubeClient, node.Spec.ProviderID)
	if err != nil {
		return nil, err
	}
	for i := range claims {
		if claims[i].DeletionTimestamp.IsZero() {
			// The list shares the cache's objects; the caller changes it.
			return claims[i].DeepCopy(), nil
		}
	}
	return nil, nil
}

// EventTime is when the pod's latest node-relevant event happened: the
// deletion request of a terminating pod, the last condition change of a
// finished pod, or the binding of a running one (its PodScheduled
// transition, else its creation). It is never after now.
func EventTime(pod *corev1.Pod, now time.Time) time.Time {
	var at time.Time
	switch {
	case pod.DeletionTimestamp != nil:
		at = pod.DeletionTimestamp.Time
		if pod.DeletionGracePeriodSeconds != nil {
			at = at.Add(-time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second)
		}
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		at = pod.CreationTimestamp.Time
		for _, cond := range pod.Status.Conditions {
			if cond.LastTransitionTime.After(at) {
				at = cond.LastTransitionTime.Time
			}
		}
	default:
		at = pod.CreationTimestamp.Time
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionTrue && cond.LastTransitionTime.After(at) {
				at = cond.LastTransitionTime.Time
			}
		}
	}
	if at.After(now) {
		return now
	}
	return at
}
