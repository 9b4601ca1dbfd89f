package nodeoverlay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	karpv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/v1alpha1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/overlay"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/singleton"
)

// resyncPeriod re-evaluates without a change, for instance-type catalogs
// that change on their own (upstream's period).
const resyncPeriod = 6 * time.Hour

// requestName is the one request every event maps to.
const requestName = "nodeoverlays"

// Controller evaluates NodeOverlays (see the package doc).
type Controller struct {
	kubeClient client.Client
	// cloudProvider gives the instance types without overlays.
	cloudProvider cloudprovider.CloudProvider
	store         *overlay.Store
	clock         clock.Clock
	// wellKnown are provider label keys overlays may select on.
	wellKnown []sets.Set[string]
}

var _ reconcile.Reconciler = (*Controller)(nil)

// NewController builds the controller. cloudProvider must be the provider
// without the overlay decorator (its instance types are what the overlays
// apply to); store is the decorator's.
func NewController(kubeClient client.Client, cloudProvider cloudprovider.CloudProvider, store *overlay.Store, clk clock.Clock) *Controller {
	return &Controller{kubeClient: kubeClient, cloudProvider: cloudProvider, store: store, clock: clk,
		wellKnown: []sets.Set[string]{kwokv1alpha1.WellKnownLabels}}
}

// Name is the controller's name.
func (c *Controller) Name() string { return "nodeoverlay.evaluation" }

// Register runs the evaluation at start and on every NodeOverlay, NodePool
// or NodeClass spec change.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	toOne := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: requestName}}}
	})
	specChanged := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	b := builder.ControllerManagedBy(mgr).Named(c.Name()).
		WatchesRawSource(singleton.Source(requestName)).
		Watches(&karpv1alpha1.NodeOverlay{}, toOne, specChanged).
		Watches(&karpv1.NodePool{}, toOne, specChanged).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1})
	for _, nodeClass := range c.cloudProvider.GetSupportedNodeClasses() {
		b = b.Watches(nodeClass, toOne, specChanged)
	}
	return b.Complete(conflict.Requeue(c))
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeoverlays,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeoverlays/status,verbs=patch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch

// Reconcile evaluates every NodeOverlay against every NodePool's instance
// types, publishes the result and writes the overlays' conditions.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	ev, err := Evaluate(ctx, c.kubeClient, c.cloudProvider, c.wellKnown)
	if err != nil {
		return reconcile.Result{}, err
	}
	// Act: publish, then write the conditions.
	c.store.Update(ev.Applied, ev.Generations, ev.NodePools)
	log.FromContext(ctx).V(1).Info("evaluated nodeoverlays", "applied", len(ev.Applied), "invalid", len(ev.Invalid),
		"conflicting", len(ev.Conflicts), "nodePools", len(ev.NodePools))
	errs := ev.TypeErrors
	for i := range ev.Overlays {
		if err := c.patchStatus(ctx, &ev.Overlays[i], ev.Invalid, ev.Conflicts); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		// A NodePool whose types could not be read stays unevaluated (its
		// provisioning waits) until a retry reads them.
		return reconcile.Result{}, errors.Join(errs...)
	}
	return reconcile.Result{RequeueAfter: resyncPeriod}, nil
}

// Evaluation is one evaluation of every NodeOverlay against every
// NodePool's instance types: what Reconcile publishes and writes, and what
// `karp explain` applies to the cluster it reads.
type Evaluation struct {
	overlay.Evaluation
	// Overlays are the NodeOverlays read.
	Overlays []karpv1alpha1.NodeOverlay
	// Invalid names each overlay that fails runtime validation, with why.
	Invalid map[string]string
	// Generations are the overlays' generations the evaluation saw.
	Generations map[string]int64
	// NodePools are the NodePools evaluated (their instance types read).
	NodePools []string
	// TypeErrors are the NodePools whose instance types could not be
	// read; they stay unevaluated.
	TypeErrors []error
}

// Evaluate reads the NodeOverlays and each NodePool's instance types from
// cloudProvider (the provider without the overlay decorator) and decides
// which overlays apply. wellKnown are provider label keys overlays may
// select on. The error is the overlays' listing; NodePools whose types
// cannot be read are in TypeErrors.
func Evaluate(ctx context.Context, reader client.Reader, cloudProvider cloudprovider.CloudProvider, wellKnown []sets.Set[string]) (*Evaluation, error) {
	// Gather: the overlays, and each NodePool's instance types.
	overlays := &karpv1alpha1.NodeOverlayList{}
	if err := reader.List(ctx, overlays); err != nil {
		return nil, fmt.Errorf("listing nodeoverlays: %w", err)
	}
	pools, typeErrs := poolTypes(ctx, reader, cloudProvider)
	// Decide: validate, order, find conflicts.
	ev := &Evaluation{Overlays: overlays.Items, Invalid: map[string]string{},
		Generations: make(map[string]int64, len(overlays.Items)), TypeErrors: typeErrs}
	var decoded []overlay.Overlay
	for i := range overlays.Items {
		no := &overlays.Items[i]
		ev.Generations[no.Name] = no.Generation
		o, err := decode(no, wellKnown)
		if err != nil {
			ev.Invalid[no.Name] = err.Error()
			continue
		}
		decoded = append(decoded, o)
	}
	overlay.Order(decoded)
	ev.Evaluation = overlay.Evaluate(decoded, pools)
	ev.NodePools = make([]string, 0, len(pools))
	for _, pt := range pools {
		ev.NodePools = append(ev.NodePools, pt.NodePool.Name)
	}
	return ev, nil
}

// decode validates the overlay and decodes it for matching.
func decode(no *karpv1alpha1.NodeOverlay, wellKnown []sets.Set[string]) (overlay.Overlay, error) {
	if err := no.RuntimeValidate(wellKnown...); err != nil {
		return overlay.Overlay{}, err
	}
	return overlay.New(no)
}

// poolTypes returns every NodePool not being deleted with its instance
// types. A NodePool whose types cannot be read is left out (it stays
// unevaluated) and its error returned.
func poolTypes(ctx context.Context, reader client.Reader, cloudProvider cloudprovider.CloudProvider) ([]overlay.PoolTypes, []error) {
	nodePools := &karpv1.NodePoolList{}
	if err := reader.List(ctx, nodePools); err != nil {
		return nil, []error{fmt.Errorf("listing nodepools: %w", err)}
	}
	var out []overlay.PoolTypes
	var errs []error
	for i := range nodePools.Items {
		np := &nodePools.Items[i]
		types, err := cloudProvider.GetInstanceTypes(ctx, np)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing instance types of nodepool %s: %w", np.Name, err))
			continue
		}
		out = append(out, overlay.PoolTypes{NodePool: np, InstanceTypes: types})
	}
	return out, errs
}

// patchStatus sets the overlay's ValidationSucceeded condition and
// patches it when it changed.
func (c *Controller) patchStatus(ctx context.Context, no *karpv1alpha1.NodeOverlay, invalid, conflicts map[string]string) error {
	stored := no.DeepCopy()
	conditions := no.StatusConditions().WithClock(c.clock)
	conditions.Initialize()
	if msg, ok := invalid[no.Name]; ok {
		conditions.SetFalse(karpv1alpha1.ConditionTypeValidationSucceeded, karpv1alpha1.ReasonRuntimeValidation, msg)
	} else if msg, ok := conflicts[no.Name]; ok {
		conditions.SetFalse(karpv1alpha1.ConditionTypeValidationSucceeded, karpv1alpha1.ReasonConflict, msg)
	} else {
		conditions.SetTrue(karpv1alpha1.ConditionTypeValidationSucceeded)
	}
	if equality.Semantic.DeepEqual(stored.Status, no.Status) {
		return nil
	}
	if err := c.kubeClient.Status().Patch(ctx, no, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("patching nodeoverlay %s status: %w", no.Name, err))
	}
	return nil
}
