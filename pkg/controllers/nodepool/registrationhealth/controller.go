package registrationhealth

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/index"
	"github.com/karp-autoscaler/karp/pkg/state/nodepoolhealth"
)

// Controller resets NodeRegistrationHealthy when a NodePool or its
// NodeClass changes.
type Controller struct {
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	clock         clock.Clock
	state         *nodepoolhealth.State
}

var _ reconcile.ObjectReconciler[*karpv1.NodePool] = (*Controller)(nil)

// NewController builds the controller; state is shared with the
// nodeclaim lifecycle, which records outcomes in it.
func NewController(kubeClient client.Client, cp cloudprovider.CloudProvider, clk clock.Clock, state *nodepoolhealth.State) *Controller {
	return &Controller{kubeClient: kubeClient, cloudProvider: cp, clock: clk, state: state}
}

// Name is the controller's name.
func (c *Controller) Name() string { return "nodepool.registrationhealth" }

// Register watches NodePools and every supported NodeClass kind.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	b := builder.ControllerManagedBy(mgr).Named(c.Name()).For(&karpv1.NodePool{})
	for _, nc := range c.cloudProvider.GetSupportedNodeClasses() {
		b = b.Watches(nc, handler.EnqueueRequestsFromMapFunc(index.NodePoolsForNodeClass(c.kubeClient)))
	}
	return b.Complete(reconcile.AsReconciler(mgr.GetClient(), c))
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools/status,verbs=patch

// Reconcile resets the condition on a spec or NodeClass change and
// records the NodeClass generation.
func (c *Controller) Reconcile(ctx context.Context, nodePool *karpv1.NodePool) (reconcile.Result, error) {
	nodeClass, err := cloudprovider.GetNodeClass(ctx, c.kubeClient, c.cloudProvider, nodePool.Spec.Template.Spec.NodeClassRef)
	if err != nil || nodeClass == nil {
		return reconcile.Result{}, err
	}
	stored := nodePool.DeepCopy()
	if stale(nodePool, nodeClass.GetGeneration()) {
		nodePool.StatusConditions().WithClock(c.clock).SetUnknown(karpv1.ConditionTypeNodeRegistrationHealthy)
		c.state.Reset(nodePool.UID)
	}
	nodePool.Status.NodeClassObservedGeneration = nodeClass.GetGeneration()
	if equality.Semantic.DeepEqual(stored.Status, nodePool.Status) {
		return reconcile.Result{}, nil
	}
	if err := c.kubeClient.Status().Patch(ctx, nodePool, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching nodepool status: %w", err))
	}
	return reconcile.Result{}, nil
}

// stale is true when NodeRegistrationHealthy was never set, or was set
// for another NodePool generation or another NodeClass generation.
func stale(nodePool *karpv1.NodePool, nodeClassGeneration int64) bool {
	cond := nodePool.StatusConditions().Get(karpv1.ConditionTypeNodeRegistrationHealthy)
	return cond == nil ||
		cond.ObservedGeneration != nodePool.Generation ||
		nodePool.Status.NodeClassObservedGeneration != nodeClassGeneration
}
