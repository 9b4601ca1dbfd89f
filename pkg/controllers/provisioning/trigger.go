package provisioning

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// triggerRequeue is how often a trigger looks again at an object that
// still needs provisioning (a nomination may have expired meanwhile).
const triggerRequeue = 10 * time.Second

// PodController triggers a provisioning pass for every provisionable pod,
// nominated ones included: a pass releases nominations to nodes that
// filled up with other pods, and costs little when every pod is nominated.
type PodController struct {
	batcher *Batcher
	acker   podAcker
}

// podAcker records when the provisioner first saw a pending pod, the start
// of karpenter_pods_scheduling_decision_duration_seconds (*state.Cluster).
type podAcker interface {
	AckPods(pods ...*corev1.Pod)
}

var _ reconcile.ObjectReconciler[*corev1.Pod] = (*PodController)(nil)

// NewPodController returns the pod trigger feeding the batcher.
func NewPodController(batcher *Batcher, acker podAcker) *PodController {
	return &PodController{batcher: batcher, acker: acker}
}

// Name is the controller's name.
func (c *PodController) Name() string { return "provisioner.trigger.pod" }

// Register registers the controller with the manager.
func (c *PodController) Register(_ context.Context, mgr manager.Manager) error {
	err := builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&corev1.Pod{}, builder.WithPredicates(unbound)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
	if err != nil {
		return fmt.Errorf("registering %s: %w", c.Name(), err)
	}
	return nil
}

// unbound drops events of pods bound to a node, which are never
// provisionable (their node's deletion is the node trigger's concern),
// before they cost a reconcile: most pod updates in a scale-up are status
// updates of pods already bound.
var unbound = predicate.NewPredicateFuncs(func(o client.Object) bool {
	pod, ok := o.(*corev1.Pod)
	return !ok || pod.Spec.NodeName == ""
})

// Reconcile triggers a pass while the pod is provisionable, and looks
// again later while it stays so. The first time it sees a pod pending, it
// acks it: the time until the provisioner decides about the pod is
// measured from then, as upstream does.
func (c *PodController) Reconcile(_ context.Context, pod *corev1.Pod) (reconcile.Result, error) {
	if state.IsAwaitingScheduler(pod) {
		// Once: the scheduler's verdict is an update that brings it back.
		c.batcher.Trigger(pod.UID)
		c.acker.AckPods(pod)
		return reconcile.Result{}, nil
	}
	if !state.IsProvisionable(pod) {
		return reconcile.Result{}, nil
	}
	c.batcher.Trigger(pod.UID)
	c.acker.AckPods(pod)
	return reconcile.Result{RequeueAfter: triggerRequeue}, nil
}

// NodeController triggers a provisioning pass for nodes being disrupted or
// deleted, whose pods must be placed elsewhere.
type NodeController struct {
	batcher *Batcher
}

var _ reconcile.ObjectReconciler[*corev1.Node] = (*NodeController)(nil)

// NewNodeController returns the node trigger feeding the batcher.
func NewNodeController(batcher *Batcher) *NodeController {
	return &NodeController{batcher: batcher}
}

// Name is the controller's name.
func (c *NodeController) Name() string { return "provisioner.trigger.node" }

// Register registers the controller with the manager.
func (c *NodeController) Register(_ context.Context, mgr manager.Manager) error {
	err := builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&corev1.Node{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
	if err != nil {
		return fmt.Errorf("registering %s: %w", c.Name(), err)
	}
	return nil
}

// Reconcile triggers a pass while the node carries the disrupted taint or
// is being deleted.
func (c *NodeController) Reconcile(_ context.Context, node *corev1.Node) (reconcile.Result, error) {
	deleting := node.DeletionTimestamp != nil
	for _, t := range node.Spec.Taints {
		if t.Key == karpv1.DisruptedTaintKey {
			deleting = true
		}
	}
	if !deleting {
		return reconcile.Result{}, nil
	}
	c.batcher.Trigger(node.UID)
	return reconcile.Result{RequeueAfter: triggerRequeue}, nil
}
