package capacitytype

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/index"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/singleton"
)

// Period is how often the instances are looked at (upstream's).
const Period = time.Minute

// ReservationLabels are the labels a demoted NodeClaim or Node loses:
// upstream's reserved-capacity labels (the reservation ID, type and whether it is interruptible) and
// karp's own reservation ID label.
var ReservationLabels = []string{awsv1.LabelCapacityReservationID, awsv1.LabelCapacityReservationType,
	awsv1.LabelCapacityReservationInterruptible, scheduling.LabelReservationID}

// instanceLister lists the cluster's instances as NodeClaims (the cloud
// provider's List): each carries its providerID and the capacity type the
// instance has now.
type instanceLister interface {
	List(ctx context.Context) ([]*karpv1.NodeClaim, error)
}

// Controller demotes reserved NodeClaims and Nodes whose instance left its
// reservation.
type Controller struct {
	kubeClient client.Client
	instances  instanceLister
}

// NewController builds the controller.
func NewController(kubeClient client.Client, instances instanceLister) *Controller {
	return &Controller{kubeClient: kubeClient, instances: instances}
}

// Name is the controller's name (upstream's).
func (c *Controller) Name() string { return "capacityreservation.capacitytype" }

// Register runs the singleton loop under the manager.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		WatchesRawSource(singleton.Source(c.Name())).
		Complete(conflict.Requeue(c))
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch

// Reconcile demotes every NodeClaim (and its Nodes) whose instance is
// on-demand now.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	// 1. What each instance is now.
	instances, err := c.instances.List(ctx)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("listing instances: %w", err)
	}
	onDemand := map[string]bool{}
	for _, inst := range instances {
		if inst.Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeOnDemand {
			onDemand[inst.Status.ProviderID] = true
		}
	}
	// 2. Demote the NodeClaims of those instances, and their Nodes.
	var nodeClaims karpv1.NodeClaimList
	if err := c.kubeClient.List(ctx, &nodeClaims); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeclaims: %w", err)
	}
	var errs []error
	for i := range nodeClaims.Items {
		nodeClaim := &nodeClaims.Items[i]
		if !onDemand[nodeClaim.Status.ProviderID] || !nodeClaim.DeletionTimestamp.IsZero() {
			continue
		}
		if err := c.demote(ctx, nodeClaim); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		// Conflicts included: the next pass reads afresh after a backoff.
		return reconcile.Result{}, errors.Join(errs...)
	}
	return reconcile.Result{RequeueAfter: Period}, nil
}

// demote demotes the NodeClaim if it is still labelled reserved, then its
// registered Nodes that are.
func (c *Controller) demote(ctx context.Context, nodeClaim *karpv1.NodeClaim) error {
	if Reserved(nodeClaim.Labels) {
		if err := c.patch(ctx, nodeClaim); err != nil {
			return fmt.Errorf("demoting nodeclaim %s: %w", nodeClaim.Name, err)
		}
		log.FromContext(ctx).Info("demoted nodeclaim whose capacity reservation ended to on-demand", "NodeClaim", klog.KObj(nodeClaim))
	}
	var nodes corev1.NodeList
	if err := c.kubeClient.List(ctx, &nodes, client.MatchingFields{index.NodeProviderID: nodeClaim.Status.ProviderID}); err != nil {
		return fmt.Errorf("listing nodes of nodeclaim %s: %w", nodeClaim.Name, err)
	}
	for i := range nodes.Items {
		node := &nodes.Items[i]
		// A Node not registered yet may not have its labels synced; a
		// later pass demotes it.
		if !node.DeletionTimestamp.IsZero() || node.Labels[karpv1.NodeRegisteredLabelKey] != "true" || !Reserved(node.Labels) {
			continue
		}
		if err := c.patch(ctx, node); err != nil {
			return fmt.Errorf("demoting node %s: %w", node.Name, err)
		}
		log.FromContext(ctx).Info("demoted node whose capacity reservation ended to on-demand", "Node", klog.KObj(node))
	}
	return nil
}

// patch demotes the object's labels (Demote) in one optimistic patch.
func (c *Controller) patch(ctx context.Context, obj client.Object) error {
	stored, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("copying %T", obj)
	}
	labels := obj.GetLabels()
	Demote(labels)
	obj.SetLabels(labels)
	return client.IgnoreNotFound(c.kubeClient.Patch(ctx, obj, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})))
}

// Reserved reports whether labels say reserved capacity.
func Reserved(labels map[string]string) bool {
	return labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeReserved
}

// Demote relabels reserved capacity as on-demand: the capacity type
// changes and the reservation labels go.
func Demote(labels map[string]string) {
	labels[karpv1.CapacityTypeLabelKey] = karpv1.CapacityTypeOnDemand
	for _, k := range ReservationLabels {
		delete(labels, k)
	}
}
