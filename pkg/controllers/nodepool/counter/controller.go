package counter

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/metrics"
)

// ResourceNodes is the pseudo-resource counting a pool's nodes in
// status.resources and limits.
const ResourceNodes corev1.ResourceName = "nodes"

// Controller counts NodePool resources.
type Controller struct {
	kubeClient client.Client
}

var _ reconcile.ObjectReconciler[*karpv1.NodePool] = (*Controller)(nil)

// NewController builds the counter.
func NewController(kubeClient client.Client) *Controller {
	return &Controller{kubeClient: kubeClient}
}

// Name is the controller's name.
func (c *Controller) Name() string { return "nodepool.counter" }

// Register watches NodePools and the NodeClaims and Nodes that count toward them.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&karpv1.NodePool{}).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(byPoolLabel), builder.WithPredicates(nodeClaimCountChanged)).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(byPoolLabel), builder.WithPredicates(nodeCountChanged)).
		Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
}

// nodeCountChanged drops Node updates that cannot change a count
// (heartbeats): it passes changes of the pool label, providerID or capacity.
var nodeCountChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*corev1.Node)
		after, ok2 := e.ObjectNew.(*corev1.Node)
		if !ok1 || !ok2 {
			return true
		}
		return before.Labels[karpv1.NodePoolLabelKey] != after.Labels[karpv1.NodePoolLabelKey] ||
			before.Spec.ProviderID != after.Spec.ProviderID ||
			!equality.Semantic.DeepEqual(before.Status.Capacity, after.Status.Capacity)
	},
}

// nodeClaimCountChanged drops NodeClaim updates that cannot change a count
// (conditions, annotations): it passes changes of the pool label,
// providerID or capacity.
var nodeClaimCountChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*karpv1.NodeClaim)
		after, ok2 := e.ObjectNew.(*karpv1.NodeClaim)
		if !ok1 || !ok2 {
			return true
		}
		return before.Labels[karpv1.NodePoolLabelKey] != after.Labels[karpv1.NodePoolLabelKey] ||
			before.Status.ProviderID != after.Status.ProviderID ||
			!equality.Semantic.DeepEqual(before.Status.Capacity, after.Status.Capacity)
	},
}

func byPoolLabel(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[karpv1.NodePoolLabelKey]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools/status,verbs=patch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// Reconcile recounts the pool and patches its status when it changed.
func (c *Controller) Reconcile(ctx context.Context, nodePool *karpv1.NodePool) (reconcile.Result, error) {
	if !nodePool.DeletionTimestamp.IsZero() {
		metrics.NodePoolUsage.DeletePartialMatch(map[string]string{metrics.NodePoolLabel: nodePool.Name})
		metrics.NodePoolLimit.DeletePartialMatch(map[string]string{metrics.NodePoolLabel: nodePool.Name})
		return reconcile.Result{}, nil
	}
	resources, nodes, err := c.count(ctx, nodePool.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	publish(nodePool, resources)
	stored := nodePool.DeepCopy()
	nodePool.Status.Resources = resources
	nodePool.Status.Nodes = ptr.To(nodes)
	if equality.Semantic.DeepEqual(stored.Status, nodePool.Status) {
		return reconcile.Result{}, nil
	}
	// The patch carries only resources and nodes, which only this
	// controller writes: no lock, so condition writers never conflict with it.
	if err := c.kubeClient.Status().Patch(ctx, nodePool, client.MergeFrom(stored)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching nodepool status: %w", err))
	}
	return reconcile.Result{}, nil
}

// count sums the capacity of the pool's nodes; see the package doc.
func (c *Controller) count(ctx context.Context, pool string) (corev1.ResourceList, int64, error) {
	var nodeClaims karpv1.NodeClaimList
	// Read-only lists: no deep copies of the cache's objects.
	if err := c.kubeClient.List(ctx, &nodeClaims, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, 0, fmt.Errorf("listing nodeclaims: %w", err)
	}
	var nodes corev1.NodeList
	if err := c.kubeClient.List(ctx, &nodes, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, 0, fmt.Errorf("listing nodes: %w", err)
	}
	total, count := Sum(nodeClaims.Items, nodes.Items)
	return total, count, nil
}

// Sum adds up the capacity of NodeClaims (their Node's when registered)
// and of Nodes without a NodeClaim, plus the node count under "nodes".
// NodeClaims without a providerID (not launched) hold nothing yet.
func Sum(nodeClaims []karpv1.NodeClaim, nodes []corev1.Node) (corev1.ResourceList, int64) {
	byProviderID := make(map[string]*corev1.Node, len(nodes))
	for i := range nodes {
		if id := nodes[i].Spec.ProviderID; id != "" {
			byProviderID[id] = &nodes[i]
		}
	}
	total := corev1.ResourceList{}
	var count int64
	counted := sets.New[string]()
	for i := range nodeClaims {
		nc := &nodeClaims[i]
		if nc.Status.ProviderID == "" {
			continue
		}
		capacity := nc.Status.Capacity
		if node, ok := byProviderID[nc.Status.ProviderID]; ok && len(node.Status.Capacity) > 0 {
			capacity = node.Status.Capacity
		}
		add(total, capacity)
		count++
		counted.Insert(nc.Status.ProviderID)
	}
	for i := range nodes {
		if id := nodes[i].Spec.ProviderID; id != "" && counted.Has(id) {
			continue
		}
		add(total, nodes[i].Status.Capacity)
		count++
	}
	total[ResourceNodes] = *resource.NewQuantity(count, resource.DecimalSI)
	return total, count
}

func add(total, more corev1.ResourceList) {
	for name, q := range more {
		sum := total[name]
		sum.Add(q)
		total[name] = sum
	}
}

// publish sets the usage and limit gauges of the pool.
func publish(nodePool *karpv1.NodePool, usage corev1.ResourceList) {
	for name, q := range usage {
		metrics.NodePoolUsage.WithLabelValues(nodePool.Name, string(name)).Set(q.AsApproximateFloat64())
	}
	for name, q := range nodePool.Spec.Limits {
		metrics.NodePoolLimit.WithLabelValues(nodePool.Name, string(name)).Set(q.AsApproximateFloat64())
	}
}
