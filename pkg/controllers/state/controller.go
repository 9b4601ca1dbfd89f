package state

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// Controller copies one kind of object into the cluster state.
type Controller struct {
	name       string
	kubeClient client.Client
	newObject  func() client.Object
	update     func(client.Object)
	remove     func(types.NamespacedName)
	workers    int
	// store is the informer's own store, when the cache exposes it: the
	// state then holds the cache's objects themselves, not a shallow copy
	// of each (for a thousand pods, a megabyte and an allocation per event).
	store toolscache.Store
}

var _ reconcile.Reconciler = (*Controller)(nil)

// NewControllers returns the informer controllers for every kind the
// cluster state holds.
func NewControllers(kubeClient client.Client, cluster *state.Cluster) []*Controller {
	controllers := []*Controller{
		{name: "state.node", newObject: func() client.Object { return &corev1.Node{} }, workers: 10,
			update: func(o client.Object) { cluster.UpdateNode(o.(*corev1.Node)) },
			remove: func(k types.NamespacedName) { cluster.DeleteNode(k.Name) }},
		{name: "state.nodeclaim", newObject: func() client.Object { return &karpv1.NodeClaim{} }, workers: 10,
			update: func(o client.Object) { cluster.UpdateNodeClaim(o.(*karpv1.NodeClaim)) },
			remove: func(k types.NamespacedName) { cluster.DeleteNodeClaim(k.Name) }},
		{name: "state.pod", newObject: func() client.Object { return &corev1.Pod{} }, workers: 20,
			update: func(o client.Object) { cluster.UpdatePod(o.(*corev1.Pod)) },
			remove: cluster.DeletePod},
		{name: "state.daemonset", newObject: func() client.Object { return &appsv1.DaemonSet{} }, workers: 1,
			update: func(o client.Object) { cluster.UpdateDaemonSet(o.(*appsv1.DaemonSet)) },
			remove: cluster.DeleteDaemonSet},
		{name: "state.nodepool", newObject: func() client.Object { return &karpv1.NodePool{} }, workers: 1,
			update: func(o client.Object) { cluster.UpdateNodePool(o.(*karpv1.NodePool)) },
			remove: func(k types.NamespacedName) { cluster.DeleteNodePool(k.Name) }},
		{name: "state.poddisruptionbudget", newObject: func() client.Object { return &policyv1.PodDisruptionBudget{} }, workers: 1,
			update: func(o client.Object) { cluster.UpdatePDB(o.(*policyv1.PodDisruptionBudget)) },
			remove: cluster.DeletePDB},
	}
	for _, c := range controllers {
		c.kubeClient = kubeClient
	}
	return controllers
}

// Register registers every informer controller with the manager.
func Register(ctx context.Context, mgr manager.Manager, cluster *state.Cluster) error {
	for _, c := range NewControllers(mgr.GetClient(), cluster) {
		if err := c.Register(ctx, mgr); err != nil {
			return err
		}
	}
	return nil
}

// Name is the controller's name, state.<kind>.
func (c *Controller) Name() string { return c.name }

// Register registers the controller with the manager.
func (c *Controller) Register(ctx context.Context, mgr manager.Manager) error {
	informer, err := mgr.GetCache().GetInformer(ctx, c.newObject())
	if err != nil {
		return fmt.Errorf("registering %s: %w", c.name, err)
	}
	if shared, ok := informer.(toolscache.SharedIndexInformer); ok {
		c.store = shared.GetStore()
	}
	err = builder.ControllerManagedBy(mgr).
		Named(c.name).
		For(c.newObject()).
		WithOptions(controller.Options{MaxConcurrentReconciles: c.workers}).
		Complete(conflict.Requeue(c))
	if err != nil {
		return fmt.Errorf("registering %s: %w", c.name, err)
	}
	return nil
}

// +kubebuilder:rbac:groups="",resources=nodes;pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims;nodepools,verbs=get;list;watch

// Reconcile records the object, or forgets it once the API no longer has it.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// The cache's own object, not a copy: the Cluster copies what it
	// keeps, except pods, which it keeps as they are and never changes.
	obj, err := c.get(ctx, req.NamespacedName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			c.remove(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("getting %s: %w", req.NamespacedName, err)
	}
	c.update(obj)
	return reconcile.Result{}, nil
}

// get returns the cache's object for the key.
func (c *Controller) get(ctx context.Context, key types.NamespacedName) (client.Object, error) {
	if c.store != nil {
		item, exists, err := c.store.GetByKey(toolscache.NewObjectName(key.Namespace, key.Name).String())
		if err != nil {
			return nil, err
		}
		if !exists {
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: c.name}, key.String())
		}
		if obj, ok := item.(client.Object); ok {
			return obj, nil
		}
	}
	obj := c.newObject()
	// UnsafeDisableDeepCopy: a shallow copy of the cache's object.
	if err := c.kubeClient.Get(ctx, key, obj, &client.GetOptions{UnsafeDisableDeepCopy: ptr.To(true)}); err != nil {
		return nil, err
	}
	return obj, nil
}
