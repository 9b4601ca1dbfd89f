package nodeclass

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	"github.com/karp-autoscaler/karp/pkg/conflict"
)

// ReasonTerminating is the Ready=False reason of a deleting KWOKNodeClass.
const ReasonTerminating = "Terminating"

// Controller sets the Ready condition of KWOKNodeClasses.
type Controller struct {
	kubeClient client.Client
	clock      clock.Clock
}

var _ reconcile.ObjectReconciler[*kwokv1alpha1.KWOKNodeClass] = (*Controller)(nil)

// NewController builds the KWOKNodeClass status controller.
func NewController(kubeClient client.Client, clk clock.Clock) *Controller {
	return &Controller{kubeClient: kubeClient, clock: clk}
}

// Name is the controller's name.
func (c *Controller) Name() string { return "nodeclass.status" }

// Register watches KWOKNodeClasses.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		For(&kwokv1alpha1.KWOKNodeClass{}).
		Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
}

// +kubebuilder:rbac:groups=karpenter.kwok.sh,resources=kwoknodeclasses;kwoknodeclasses/status,verbs=get;list;watch;patch

// Reconcile sets Ready from the NodeClass's lifecycle.
func (c *Controller) Reconcile(ctx context.Context, nodeClass *kwokv1alpha1.KWOKNodeClass) (reconcile.Result, error) {
	stored := nodeClass.DeepCopy()
	conditions := nodeClass.StatusConditions().WithClock(c.clock)
	if nodeClass.DeletionTimestamp.IsZero() {
		conditions.SetTrue(kwokv1alpha1.ConditionTypeReady)
	} else {
		conditions.SetFalse(kwokv1alpha1.ConditionTypeReady, ReasonTerminating, "KWOKNodeClass is being deleted")
	}
	if equality.Semantic.DeepEqual(stored.Status, nodeClass.Status) {
		return reconcile.Result{}, nil
	}
	if err := c.kubeClient.Status().Patch(ctx, nodeClass, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching kwoknodeclass status: %w", err))
	}
	return reconcile.Result{}, nil
}
