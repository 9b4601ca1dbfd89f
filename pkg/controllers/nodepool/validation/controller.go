package validation

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/conflict"
)

// ReasonNodePoolValidationFailed is ValidationSucceeded's reason when False.
const ReasonNodePoolValidationFailed = "NodePoolValidationFailed"

// ReasonStaticCapacityDisabled is ReplicasServed's reason (False) on a
// static NodePool (spec.replicas) while the StaticCapacity feature gate is
// off: such a NodePool gets no nodes, and says so there and in a warning
// event with this reason rather than silently. With the gate on, the
// static controller owns the condition.
const ReasonStaticCapacityDisabled = "StaticCapacityDisabled"

// ConditionTypeDisruptionBudgetsValid is False on a NodePool with a
// disruption budget karp cannot evaluate though the CRD schema let it
// through (see karpv1.NodePool.ValidateBudgets): such a budget allows no
// disruptions for its reasons, which without the condition would only
// show as consolidation, drift and expiry silently stopping. The message
// names each bad budget; a warning event (reason
// ReasonInvalidDisruptionBudget) says the same once per spec change. It
// is informational: not part of Ready, since provisioning is unaffected;
// a NodePool whose budgets are all valid does not carry it.
const ConditionTypeDisruptionBudgetsValid = "DisruptionBudgetsValid"

// ReasonInvalidDisruptionBudget is DisruptionBudgetsValid's reason when
// False and the reason of the warning event.
const ReasonInvalidDisruptionBudget = "InvalidDisruptionBudget"

// invalidBudgetConsequence ends DisruptionBudgetsValid's message.
const invalidBudgetConsequence = "; a budget that cannot be evaluated allows no disruptions for its reasons"

// staticMessage explains ReplicasServed=False while the gate is off.
const staticMessage = "the StaticCapacity feature gate is off, so static NodePools (spec.replicas) are not served " +
	"(--feature-gates=StaticCapacity=true turns it on); this NodePool gets no nodes"

// Controller validates NodePools.
type Controller struct {
	kubeClient client.Client
	clock      clock.Clock
	// wellKnown are provider label keys users may constrain on.
	wellKnown []sets.Set[string]
	recorder  events.EventRecorder
	// staticCapacity is the StaticCapacity feature gate.
	staticCapacity bool
}

var _ reconcile.ObjectReconciler[*karpv1.NodePool] = (*Controller)(nil)

// NewController builds the validation controller. The kwok provider's
// instance labels are accepted as well known.
func NewController(kubeClient client.Client, clk clock.Clock) *Controller {
	return &Controller{kubeClient: kubeClient, clock: clk, wellKnown: []sets.Set[string]{kwokv1alpha1.WellKnownLabels}}
}

// WithStaticCapacity says whether the StaticCapacity feature gate is on:
// then the static controller owns a static NodePool's ReplicasServed
// condition; off (the default), it is False here.
func (c *Controller) WithStaticCapacity(on bool) *Controller {
	c.staticCapacity = on
	return c
}

// WithRecorder makes the controller publish a warning event on each static
// NodePool it cannot serve (the gate is off) and each invalid budget.
func (c *Controller) WithRecorder(rec events.EventRecorder) *Controller {
	c.recorder = rec
	return c
}

// Name is the controller's name.
func (c *Controller) Name() string { return "nodepool.validation" }

// Register watches NodePool spec changes.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&karpv1.NodePool{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools/status,verbs=patch

// Reconcile sets ValidationSucceeded.
func (c *Controller) Reconcile(ctx context.Context, nodePool *karpv1.NodePool) (reconcile.Result, error) {
	stored := nodePool.DeepCopy()
	conditions := nodePool.StatusConditions().WithClock(c.clock)
	conditions.Initialize()
	if err := nodePool.RuntimeValidate(c.wellKnown...); err != nil {
		conditions.SetFalse(karpv1.ConditionTypeValidationSucceeded, ReasonNodePoolValidationFailed, err.Error())
	} else {
		conditions.SetTrue(karpv1.ConditionTypeValidationSucceeded)
	}
	budgetsErr := nodePool.ValidateBudgets()
	if budgetsErr != nil {
		conditions.SetFalse(ConditionTypeDisruptionBudgetsValid, ReasonInvalidDisruptionBudget, budgetsMessage(budgetsErr))
	} else {
		conditions.Clear(ConditionTypeDisruptionBudgetsValid)
	}
	unserved := nodePool.Spec.Replicas != nil && !c.staticCapacity
	switch {
	case unserved:
		conditions.SetFalse(karpv1.ConditionTypeReplicasServed, ReasonStaticCapacityDisabled, staticMessage)
	case nodePool.Spec.Replicas == nil:
		conditions.Clear(karpv1.ConditionTypeReplicasServed)
	}
	// The watch passes generation changes only: one event per spec change.
	if unserved && c.recorder != nil {
		c.recorder.Eventf(nodePool, nil, corev1.EventTypeWarning, ReasonStaticCapacityDisabled, "Validate", staticMessage)
	}
	if budgetsErr != nil && c.recorder != nil {
		c.recorder.Eventf(nodePool, nil, corev1.EventTypeWarning, ReasonInvalidDisruptionBudget, "Validate", "%s", budgetsMessage(budgetsErr))
	}
	if equality.Semantic.DeepEqual(stored.Status, nodePool.Status) {
		return reconcile.Result{}, nil
	}
	if err := c.kubeClient.Status().Patch(ctx, nodePool, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching nodepool status: %w", err))
	}
	return reconcile.Result{}, nil
}

// budgetsMessage is ValidateBudgets' error on one line, with what it means.
func budgetsMessage(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ") + invalidBudgetConsequence
}
