package registrationhealth

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/index"
	"github.com/karp-autoscaler/karp/pkg/state/nodepoolhealth"
)

// FieldOwner is the field manager of the controller's server-side
// applies: it owns NodeRegistrationHealthy and nodeClassObservedGeneration
// in NodePool status.
const FieldOwner = "karp-nodepool-registrationhealth"

// Controller is the one writer of a NodePool's NodeRegistrationHealthy
// condition: it copies the condition the shared State computed from the
// NodeClaims' outcomes, and resets it when the NodePool or its NodeClass
// changes.
type Controller struct {
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	clock         clock.Clock
	state         *nodepoolhealth.State
	// apiReader, when set, reads a NodePool from the API server right
	// before its status is written (see write).
	apiReader client.Reader
}

var _ reconcile.ObjectReconciler[*karpv1.NodePool] = (*Controller)(nil)

// NewController builds the controller; state is shared with the
// nodeclaim lifecycle, which records outcomes in it.
func NewController(kubeClient client.Client, cp cloudprovider.CloudProvider, clk clock.Clock, state *nodepoolhealth.State) *Controller {
	return &Controller{kubeClient: kubeClient, cloudProvider: cp, clock: clk, state: state}
}

// WithAPIReader makes the controller check, right before each write, that
// the NodePool it read is still the one stored under its name.
func (c *Controller) WithAPIReader(r client.Reader) *Controller {
	c.apiReader = r
	return c
}

// Name is the controller's name.
func (c *Controller) Name() string { return "nodepool.registrationhealth" }

// Register watches NodePools, every supported NodeClass kind, and the
// State: a recorded outcome enqueues its NodePool, so a burst of
// registrations collapses into the reconciles the queue holds (one per
// NodePool at a time).
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	b := builder.ControllerManagedBy(mgr).Named(c.Name()).For(&karpv1.NodePool{}).
		WatchesRawSource(source.Func(c.watchState))
	for _, nc := range c.cloudProvider.GetSupportedNodeClasses() {
		b = b.Watches(nc, handler.EnqueueRequestsFromMapFunc(index.NodePoolsForNodeClass(c.kubeClient)))
	}
	return b.Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
}

// watchState enqueues the NodePool of every outcome recorded from now
// on. Outcomes recorded before are picked up by the initial reconcile of
// every NodePool.
func (c *Controller) watchState(_ context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	c.state.OnChange(func(nodePool string) {
		queue.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: nodePool}})
	})
	return nil
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools/status,verbs=patch

// Reconcile resets the condition on a spec or NodeClass change, else
// copies the State's condition, and records the NodeClass generation.
func (c *Controller) Reconcile(ctx context.Context, nodePool *karpv1.NodePool) (reconcile.Result, error) {
	nodeClass, err := cloudprovider.GetNodeClass(ctx, c.kubeClient, c.cloudProvider, nodePool.Spec.Template.Spec.NodeClassRef)
	if err != nil || nodeClass == nil {
		return reconcile.Result{}, err
	}
	// 1. A stale condition (another spec's) starts again from Unknown:
	// the State forgets its outcomes once per spec, so a copy read from a
	// cache that has not yet seen the reset's own write keeps what was
	// recorded since. Otherwise, after a restart the State is empty: seed
	// it from the stored condition, so it goes on from there.
	want := nodePool.DeepCopy()
	conditions := want.StatusConditions().WithClock(c.clock)
	if stale(nodePool, nodeClass.GetGeneration()) {
		conditions.SetUnknown(karpv1.ConditionTypeNodeRegistrationHealthy)
		c.state.Reset(nodePool.UID, nodepoolhealth.Generations{NodePool: nodePool.Generation, NodeClass: nodeClass.GetGeneration()})
	} else {
		c.state.Seed(nodePool.UID, nodepoolhealth.StoredStatus(nodePool))
	}
	// 2. Move the copy's condition to the State's verdict.
	apply(conditions, c.state.Condition(nodePool.UID))
	want.Status.NodeClassObservedGeneration = nodeClass.GetGeneration()
	cond := conditions.Get(karpv1.ConditionTypeNodeRegistrationHealthy)
	stored := nodePool.StatusConditions().Get(karpv1.ConditionTypeNodeRegistrationHealthy)
	if stored != nil && *cond == *stored && want.Status.NodeClassObservedGeneration == nodePool.Status.NodeClassObservedGeneration {
		return reconcile.Result{}, nil
	}
	// 3. Write only our two fields.
	return reconcile.Result{}, c.write(ctx, nodePool, *cond, want.Status.NodeClassObservedGeneration)
}

// apply moves the condition to the State's verdict. Unknown (nothing
// recorded since the last reset) leaves it alone; a False condition keeps
// the reason of the failure that made it False.
func apply(conditions karpv1.ConditionSet, want nodepoolhealth.Condition) {
	switch want.Status {
	case nodepoolhealth.StatusHealthy:
		conditions.SetTrue(karpv1.ConditionTypeNodeRegistrationHealthy)
	case nodepoolhealth.StatusUnhealthy:
		if !conditions.IsFalse(karpv1.ConditionTypeNodeRegistrationHealthy) {
			conditions.SetFalse(karpv1.ConditionTypeNodeRegistrationHealthy, want.Reason, want.Message)
		}
	}
}

// write applies the condition and nodeClassObservedGeneration server-side
// as FieldOwner. An apply carries no resourceVersion, so other writers of
// the NodePool's status (readiness, counter, validation) never make it
// conflict, and the conditions list is a map keyed by type, so it leaves
// theirs alone. An apply to a NodePool deleted meanwhile is NotFound. An
// apply cannot be made conditional on the UID (the status strategy keeps
// the stored metadata), so with an API reader the NodePool is read again
// first, and one deleted and created again under its name since the
// cache's copy (whose verdict would otherwise become the new NodePool's)
// is left to its own reconcile.
func (c *Controller) write(ctx context.Context, nodePool *karpv1.NodePool, cond metav1.Condition, nodeClassGeneration int64) error {
	if c.apiReader != nil {
		current := &karpv1.NodePool{}
		if err := c.apiReader.Get(ctx, client.ObjectKeyFromObject(nodePool), current); err != nil {
			return client.IgnoreNotFound(err)
		}
		if current.UID != nodePool.UID {
			log.FromContext(ctx).V(1).Info("nodepool was created again since it was read, leaving its registration health to its own reconcile")
			return nil
		}
	}
	cfg := client.ApplyConfigurationFromUnstructured(applyConfiguration(nodePool, cond, nodeClassGeneration))
	err := c.kubeClient.Status().Apply(ctx, cfg, client.FieldOwner(FieldOwner), client.ForceOwnership)
	switch {
	case err == nil:
		log.FromContext(ctx).V(1).Info("set nodepool registration health", "status", cond.Status, "reason", cond.Reason)
		return nil
	case apierrors.IsNotFound(err):
		return nil
	default:
		return fmt.Errorf("applying nodepool NodeRegistrationHealthy: %w", err)
	}
}

// stale is true when NodeRegistrationHealthy was never set, or was set
// for another NodePool generation or another NodeClass generation.
func stale(nodePool *karpv1.NodePool, nodeClassGeneration int64) bool {
	cond := nodePool.StatusConditions().Get(karpv1.ConditionTypeNodeRegistrationHealthy)
	return cond == nil ||
		cond.ObservedGeneration != nodePool.Generation ||
		nodePool.Status.NodeClassObservedGeneration != nodeClassGeneration
}
