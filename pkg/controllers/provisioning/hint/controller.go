package hint

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// Controller hints the scheduler with the node of a NodeClaim as
// soon as it registers (a new node's name is not known before), for the
// pods the provisioner nominated to that NodeClaim.
type Controller struct {
	kubeClient client.Client
	cluster    *state.Cluster
}

var _ reconcile.ObjectReconciler[*karpv1.NodeClaim] = (*Controller)(nil)

// NewController returns the registration-time scheduler hinter.
func NewController(kubeClient client.Client, cluster *state.Cluster) *Controller {
	return &Controller{kubeClient: kubeClient, cluster: cluster}
}

// Name is the controller's name.
func (c *Controller) Name() string { return "provisioner.hint" }

// Register watches NodeClaims getting their node name, and pending pods
// whose hint the scheduler cleared: it does after every failed attempt
// (with preemption's "nothing to preempt" result), and a pod still
// retrying because no node existed yet when it was created fails once
// more on its planned node while that node starts. The NodeClaim the pod
// is nominated to is then hinted again; only its pods without the hint
// are written.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	registered := predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return nodeNameOf(e.Object) != "" },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return nodeNameOf(e.ObjectOld) == "" && nodeNameOf(e.ObjectNew) != ""
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	err := builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&karpv1.NodeClaim{}, builder.WithPredicates(registered)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(c.nominatedNodeClaim), builder.WithPredicates(hintCleared)).
		// The nodes of a scale-out register within a few seconds; one
		// worker writing their hints in turn fell behind, and the batch
		// hold then had to write them all before it could lift.
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
	if err != nil {
		return fmt.Errorf("registering %s: %w", c.Name(), err)
	}
	return nil
}

// hintCleared passes updates of pending pods that lost their nominated
// node.
var hintCleared = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		before, okBefore := e.ObjectOld.(*corev1.Pod)
		after, okAfter := e.ObjectNew.(*corev1.Pod)
		return okBefore && okAfter && after.Spec.NodeName == "" && after.DeletionTimestamp == nil &&
			before.Status.NominatedNodeName != "" && after.Status.NominatedNodeName == ""
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// nominatedNodeClaim maps a pod to the NodeClaim karp nominated it to.
func (c *Controller) nominatedNodeClaim(_ context.Context, o client.Object) []reconcile.Request {
	id := c.cluster.HintedNode(client.ObjectKeyFromObject(o))
	name, ok := strings.CutPrefix(id, state.NodeClaimID(""))
	if !ok || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
}

func nodeNameOf(o client.Object) string {
	if nc, ok := o.(*karpv1.NodeClaim); ok {
		return nc.Status.NodeName
	}
	return ""
}

// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch

// Reconcile hints the pods nominated to the NodeClaim with its node.
func (c *Controller) Reconcile(ctx context.Context, nodeClaim *karpv1.NodeClaim) (reconcile.Result, error) {
	if nodeClaim.Status.NodeName == "" || !nodeClaim.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	pods := c.cluster.HintedPods(state.NodeClaimID(nodeClaim.Name))
	hints := make([]Hint, 0, len(pods))
	for _, pod := range pods {
		hints = append(hints, Hint{Pod: pod, Node: nodeClaim.Status.NodeName})
	}
	writeHints(ctx, c.kubeClient, hints)
	return reconcile.Result{}, nil
}
