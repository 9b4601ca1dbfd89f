package finalized

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/conflict"
)

// ReasonFinalized is the reason of the event recorded for each finalizer
// that leaves an object (upstream's).
const ReasonFinalized = "Finalized"

// Controller reports the finalizers that leave the objects of one kind.
type Controller struct {
	kubeClient client.Client
	recorder   events.EventRecorder
	kind       string
	newObject  func() client.Object

	mu sync.Mutex
	// seen is, per object with finalizers, the object as last seen (its
	// identity only) and its finalizers then.
	seen map[types.NamespacedName]observed
}

type observed struct {
	object     client.Object
	finalizers []string
}

var _ reconcile.Reconciler = (*Controller)(nil)

// NewControllers returns the controllers for NodeClaims, Nodes and
// NodePools, the kinds upstream reports.
func NewControllers(kubeClient client.Client, recorder events.EventRecorder) []*Controller {
	return []*Controller{
		newController(kubeClient, recorder, "NodeClaim", func() client.Object { return &karpv1.NodeClaim{} }),
		newController(kubeClient, recorder, "Node", func() client.Object { return &corev1.Node{} }),
		newController(kubeClient, recorder, "NodePool", func() client.Object { return &karpv1.NodePool{} }),
	}
}

func newController(kubeClient client.Client, recorder events.EventRecorder, kind string, newObject func() client.Object) *Controller {
	return &Controller{kubeClient: kubeClient, recorder: recorder, kind: kind, newObject: newObject, seen: map[types.NamespacedName]observed{}}
}

// Name is "<kind>.finalized".
func (c *Controller) Name() string { return strings.ToLower(c.kind) + ".finalized" }

// Register watches the kind's creations, deletions and finalizer changes.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(c.newObject(), builder.WithPredicates(finalizersChanged)).
		Complete(conflict.Requeue(c))
}

// finalizersChanged passes updates that change an object's finalizers,
// and every creation and deletion.
var finalizersChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return !slices.Equal(e.ObjectOld.GetFinalizers(), e.ObjectNew.GetFinalizers())
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims;nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile compares the object's finalizers with the last seen ones and
// reports each one that left; an object that is gone (or replaced by a
// new one of the same name) has lost all of them.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj := c.newObject()
	err := c.kubeClient.Get(ctx, req.NamespacedName, obj)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("getting %s: %w", strings.ToLower(c.kind), err)
	}
	gone := err != nil
	c.mu.Lock()
	last, known := c.seen[req.NamespacedName]
	if gone || len(obj.GetFinalizers()) == 0 {
		delete(c.seen, req.NamespacedName)
	} else {
		c.seen[req.NamespacedName] = observed{object: c.identity(obj), finalizers: slices.Clone(obj.GetFinalizers())}
	}
	c.mu.Unlock()
	if !known {
		return reconcile.Result{}, nil
	}
	// 1. The same object: the finalizers it no longer has.
	if !gone && obj.GetUID() == last.object.GetUID() {
		for _, f := range last.finalizers {
			if !slices.Contains(obj.GetFinalizers(), f) {
				c.report(obj, f)
			}
		}
		return reconcile.Result{}, nil
	}
	// 2. Gone, or replaced: every finalizer it had, on the object as it was.
	for _, f := range last.finalizers {
		c.report(last.object, f)
	}
	return reconcile.Result{}, nil
}

func (c *Controller) report(obj client.Object, finalizer string) {
	c.recorder.Eventf(obj, nil, corev1.EventTypeNormal, ReasonFinalized, "Finalize", "Finalized %s", finalizer)
}

// identity copies what an event needs to name the object: its kind (by
// type), name, namespace and UID. It leaves out the resource version, which
// the object as last seen no longer has.
func (c *Controller) identity(obj client.Object) client.Object {
	out := c.newObject()
	out.SetName(obj.GetName())
	out.SetNamespace(obj.GetNamespace())
	out.SetUID(obj.GetUID())
	return out
}
