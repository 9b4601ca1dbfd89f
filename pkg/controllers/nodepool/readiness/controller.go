package readiness

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/index"
)

// NodeClassReady reasons.
const (
	ReasonNodeClassNotFound    = "NodeClassNotFound"
	ReasonNodeClassTerminating = "NodeClassTerminating"
	ReasonNodeClassNotReady    = "NodeClassNotReady"
)

// Controller mirrors NodeClass readiness onto NodePools.
type Controller struct {
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	clock         clock.Clock
}

var _ reconcile.ObjectReconciler[*karpv1.NodePool] = (*Controller)(nil)

// NewController builds the readiness controller.
func NewController(kubeClient client.Client, cp cloudprovider.CloudProvider, clk clock.Clock) *Controller {
	return &Controller{kubeClient: kubeClient, cloudProvider: cp, clock: clk}
}

// Name is the controller's name.
func (c *Controller) Name() string { return "nodepool.readiness" }

// Register watches NodePools and every supported NodeClass kind.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	b := builder.ControllerManagedBy(mgr).Named(c.Name()).For(&karpv1.NodePool{})
	for _, nc := range c.cloudProvider.GetSupportedNodeClasses() {
		b = b.Watches(nc, handler.EnqueueRequestsFromMapFunc(index.NodePoolsForNodeClass(c.kubeClient)))
	}
	return b.Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools/status,verbs=patch
// +kubebuilder:rbac:groups=karpenter.kwok.sh,resources=kwoknodeclasses,verbs=get;list;watch

// Reconcile sets NodeClassReady.
func (c *Controller) Reconcile(ctx context.Context, nodePool *karpv1.NodePool) (reconcile.Result, error) {
	stored := nodePool.DeepCopy()
	conditions := nodePool.StatusConditions().WithClock(c.clock)
	conditions.Initialize()
	nodeClass, err := cloudprovider.GetNodeClass(ctx, c.kubeClient, c.cloudProvider, nodePool.Spec.Template.Spec.NodeClassRef)
	switch {
	case err != nil:
		return reconcile.Result{}, err
	case nodeClass == nil:
		conditions.SetFalse(karpv1.ConditionTypeNodeClassReady, ReasonNodeClassNotFound, c.notFoundMessage(nodePool.Spec.Template.Spec.NodeClassRef))
	case !nodeClass.GetDeletionTimestamp().IsZero():
		conditions.SetFalse(karpv1.ConditionTypeNodeClassReady, ReasonNodeClassTerminating, "NodeClass is terminating")
	default:
		mirror(conditions, nodeClass.StatusConditions().Root())
	}
	if equality.Semantic.DeepEqual(stored.Status, nodePool.Status) {
		return reconcile.Result{}, nil
	}
	if err := c.kubeClient.Status().Patch(ctx, nodePool, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching nodepool status: %w", err))
	}
	return reconcile.Result{}, nil
}

// mirror copies the NodeClass's Ready condition into NodeClassReady.
func mirror(conditions karpv1.ConditionSet, ready *metav1.Condition) {
	switch {
	case ready == nil:
		conditions.SetUnknownWithReason(karpv1.ConditionTypeNodeClassReady, ReasonNodeClassNotReady, "NodeClass has no Ready condition yet")
	case ready.Status == metav1.ConditionTrue:
		conditions.SetTrue(karpv1.ConditionTypeNodeClassReady)
	case ready.Status == metav1.ConditionFalse:
		conditions.SetFalse(karpv1.ConditionTypeNodeClassReady, ReasonNodeClassNotReady, "NodeClass not ready: "+ready.Message)
	default:
		conditions.SetUnknownWithReason(karpv1.ConditionTypeNodeClassReady, ReasonNodeClassNotReady, "NodeClass readiness unknown: "+ready.Message)
	}
}

// notFoundMessage says which NodeClass is missing, or that its kind is not
// one the cloud provider serves (a NodePool of EC2NodeClass under the kwok
// provider), where upstream says only "NodeClass not found on cluster".
func (c *Controller) notFoundMessage(ref *karpv1.NodeClassReference) string {
	const prefix = "NodeClass not found on cluster"
	if ref == nil {
		return prefix + ": the NodePool has no nodeClassRef"
	}
	var supported []string
	for _, obj := range c.cloudProvider.GetSupportedNodeClasses() {
		gvk, err := apiutil.GVKForObject(obj, c.kubeClient.Scheme())
		if err != nil {
			continue
		}
		if gvk.Group == ref.Group && gvk.Kind == ref.Kind {
			return fmt.Sprintf("%s: %s %q (group %s)", prefix, ref.Kind, ref.Name, ref.Group)
		}
		supported = append(supported, gvk.GroupKind().String())
	}
	return fmt.Sprintf("%s: kind %s of group %s is not served by the %s cloud provider, which serves %s",
		prefix, ref.Kind, ref.Group, c.cloudProvider.Name(), strings.Join(supported, ", "))
}
