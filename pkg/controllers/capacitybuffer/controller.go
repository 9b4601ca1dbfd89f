package capacitybuffer

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	autoscalingv1beta1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1beta1"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/state/buffers"
)

// resyncPeriod resolves each buffer again without a change, and asks for
// a provisioning pass (upstream Karpenter's period): a Job's parallelism is
// not watched, and a real pod the scheduler binds into a buffer's room does
// not trigger the provisioner, so this bounds how long a used buffer waits
// to be refilled.
const resyncPeriod = 30 * time.Second

// trigger asks the provisioner for a pass (its Batcher).
type trigger interface {
	Trigger(uid types.UID)
}

// Controller resolves CapacityBuffers (see the package doc).
type Controller struct {
	kubeClient client.Client
	// apiReader reads scalable objects with their pod templates.
	apiReader client.Reader
	store     *buffers.Store
	trigger   trigger
	clock     clock.Clock
}

var _ reconcile.Reconciler = (*Controller)(nil)

// NewController builds the controller. apiReader reads from the API server
// (the cache has no workload pod templates); store is shared with the
// provisioner and disruption; trigger starts a provisioning pass.
func NewController(kubeClient client.Client, apiReader client.Reader, store *buffers.Store, trigger trigger, clk clock.Clock) *Controller {
	return &Controller{kubeClient: kubeClient, apiReader: apiReader, store: store, trigger: trigger, clock: clk}
}

// Name is the controller's name.
func (c *Controller) Name() string { return "capacitybuffer" }

// Register watches CapacityBuffers, the PodTemplates and workloads they
// reference, and the provisioner's outcomes.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		For(&autoscalingv1beta1.CapacityBuffer{}).
		Watches(&corev1.PodTemplate{}, handler.EnqueueRequestsFromMapFunc(c.referencing(""))).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(c.referencing(autoscalingv1beta1.KindDeployment))).
		Watches(&appsv1.ReplicaSet{}, handler.EnqueueRequestsFromMapFunc(c.referencing(autoscalingv1beta1.KindReplicaSet))).
		Watches(&appsv1.StatefulSet{}, handler.EnqueueRequestsFromMapFunc(c.referencing(autoscalingv1beta1.KindStatefulSet))).
		WatchesRawSource(source.Channel(c.store.Changes(), &handler.TypedEnqueueRequestForObject[*autoscalingv1beta1.CapacityBuffer]{})).
		Complete(conflict.Requeue(c))
}

// referencing maps a PodTemplate (kind "") or a workload of the kind to
// the buffers of its namespace that reference it.
func (c *Controller) referencing(kind string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		list := &autoscalingv1beta1.CapacityBufferList{}
		if err := c.kubeClient.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
			log.FromContext(ctx).Error(err, "listing capacitybuffers")
			return nil
		}
		var out []reconcile.Request
		for i := range list.Items {
			spec := &list.Items[i].Spec
			if (kind == "" && spec.PodTemplateRef != nil && spec.PodTemplateRef.Name == obj.GetName()) ||
				(kind != "" && spec.ScalableRef != nil && spec.ScalableRef.Kind == kind && spec.ScalableRef.Name == obj.GetName()) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
		}
		return out
	}
}

// +kubebuilder:rbac:groups=autoscaling.x-k8s.io,resources=capacitybuffers,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling.x-k8s.io,resources=capacitybuffers/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=podtemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments;replicasets;statefulsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get

// Reconcile resolves the buffer, publishes it for the provisioner and
// writes its status; a deleted buffer leaves the store. (A request-based
// reconciler: an object reconciler is not called for deleted objects.)
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cb := &autoscalingv1beta1.CapacityBuffer{}
	if err := c.kubeClient.Get(ctx, req.NamespacedName, cb); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(req.NamespacedName, types.UID(req.String()))
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("getting capacitybuffer: %w", err)
	}
	return c.reconcile(ctx, cb)
}

func (c *Controller) reconcile(ctx context.Context, cb *autoscalingv1beta1.CapacityBuffer) (reconcile.Result, error) {
	key := client.ObjectKeyFromObject(cb)
	if !cb.DeletionTimestamp.IsZero() || !active(cb) {
		// Gone, or another autoscaler's: no room, no status.
		c.forget(key, cb.UID)
		return reconcile.Result{}, nil
	}
	before := cb.DeepCopy()
	res, err := resolve(ctx, c.kubeClient, c.apiReader, cb)
	nr, isNotReady := notReady(err)
	if err != nil && !isNotReady {
		// Transient: keep what was resolved before, retry with backoff.
		return reconcile.Result{}, err
	}
	cb.Status.ProvisioningStrategy = cb.Spec.ProvisioningStrategy
	if isNotReady {
		c.forget(key, cb.UID)
		cb.Status.Replicas = nil
		c.setCondition(cb, autoscalingv1beta1.ConditionTypeReadyForProvisioning, metav1.ConditionFalse, nr.reason, nr.message)
	} else {
		c.publish(cb, res)
	}
	c.setProvisioning(cb)
	if perr := c.patchIfChanged(ctx, before, cb); perr != nil {
		return reconcile.Result{}, perr
	}
	return reconcile.Result{RequeueAfter: resyncPeriod}, nil
}

// publish writes the resolution into the status and the store, and asks
// the provisioner for a pass.
func (c *Controller) publish(cb *autoscalingv1beta1.CapacityBuffer, res *resolution) {
	cb.Status.PodTemplateRef, cb.Status.PodTemplateGeneration = nil, nil
	if res.podTemplate != "" {
		cb.Status.PodTemplateRef = &autoscalingv1beta1.LocalObjectRef{Name: res.podTemplate}
		cb.Status.PodTemplateGeneration = ptr.To(res.podTemplateGeneration)
	}
	msg := capReplicas(res)
	cb.Status.Replicas = ptr.To(res.replicas)
	c.setCondition(cb, autoscalingv1beta1.ConditionTypeReadyForProvisioning, metav1.ConditionTrue, autoscalingv1beta1.ReasonResolved, msg)
	key := client.ObjectKeyFromObject(cb)
	if res.replicas == 0 {
		c.forget(key, cb.UID)
		return
	}
	c.store.Set(buffers.Buffer{Key: key, UID: cb.UID, Template: res.template, Replicas: res.replicas})
	// Every reconcile of a buffer with pods asks for a pass, as upstream
	// Karpenter's controller does: a pod the scheduler bound into the
	// buffer's room triggers nothing else, and the resync then refills it.
	c.trigger.Trigger(cb.UID)
}

// capReplicas bounds the resolution's replicas at buffers.MaxReplicas and
// returns ReadyForProvisioning's message, which says so.
func capReplicas(res *resolution) string {
	msg := "Pod template resolved successfully"
	if res.replicas > buffers.MaxReplicas {
		res.replicas = buffers.MaxReplicas
		msg += fmt.Sprintf("; replicas capped at %d, karp's bound per buffer", buffers.MaxReplicas)
	}
	return msg
}

// forget drops the buffer from the store; the provisioner is told, so a
// node kept only for it may go.
func (c *Controller) forget(key types.NamespacedName, uid types.UID) {
	if c.store.Delete(key) {
		c.trigger.Trigger(uid)
	}
}

// active reports whether the buffer uses the strategy karp implements (the
// API server defaults it).
func active(cb *autoscalingv1beta1.CapacityBuffer) bool {
	return ptr.Deref(cb.Spec.ProvisioningStrategy, autoscalingv1beta1.ActiveProvisioningStrategy) == autoscalingv1beta1.ActiveProvisioningStrategy
}

// patchIfChanged patches the status when it changed.
func (c *Controller) patchIfChanged(ctx context.Context, before, cb *autoscalingv1beta1.CapacityBuffer) error {
	if equality.Semantic.DeepEqual(before.Status, cb.Status) {
		return nil
	}
	if err := c.kubeClient.Status().Patch(ctx, cb, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("patching capacitybuffer %s status: %w", client.ObjectKeyFromObject(cb), err))
	}
	return nil
}
