package interruption

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/index"
	"github.com/karp-autoscaler/karp/pkg/interruption"
	"github.com/karp-autoscaler/karp/pkg/metrics"
)

// NoticeAnnotationKey on a Node holds the RFC3339 time its instance will
// be reclaimed (a spot interruption notice).
const NoticeAnnotationKey = kwokv1alpha1.Group + "/interruption-time"

// NoticePeriod is how long before reclaiming an instance a notice is
// given (EC2's spot interruption warning).
const NoticePeriod = 2 * time.Minute

// Event reasons (upstream's AWS provider names).
const (
	ReasonSpotInterrupted           = interruption.ReasonSpotInterrupted
	ReasonTerminatingOnInterruption = interruption.ReasonTerminatingOnInterruption
)

// OfferingMarker makes an offering unavailable for a while; the kwok
// provider implements it.
type OfferingMarker interface {
	MarkOfferingUnavailable(ctx context.Context, key cloudprovider.OfferingKey)
}

// Controller handles interruption notices.
type Controller struct {
	kubeClient client.Client
	offerings  OfferingMarker
	clock      clock.Clock
	recorder   events.EventRecorder
	// replaceFirst marks the NodeClaim for replacement ahead of its
	// deletion when the notice leaves time for a launch.
	replaceFirst bool
}

// Option configures the controller.
type Option func(*Controller)

// WithReplaceFirst makes a notice that leaves time for a launch mark the
// NodeClaim to be replaced first (--replace-first) instead of deleting it
// at once.
func WithReplaceFirst(on bool) Option { return func(c *Controller) { c.replaceFirst = on } }

var _ reconcile.ObjectReconciler[*corev1.Node] = (*Controller)(nil)

// NewController builds the interruption controller. offerings may be nil
// (the provider keeps no availability cache).
func NewController(kubeClient client.Client, offerings OfferingMarker, clk clock.Clock, recorder events.EventRecorder, opts ...Option) *Controller {
	c := &Controller{kubeClient: kubeClient, offerings: offerings, clock: clk, recorder: recorder}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Name is the controller's name.
func (c *Controller) Name() string { return "node.interruption" }

// Register watches Nodes carrying a notice.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	noticed := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetAnnotations()[NoticeAnnotationKey] != ""
	})
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&corev1.Node{}, builder.WithPredicates(noticed)).
		Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;patch;delete

// Reconcile marks the offering unavailable, sets the drain deadline and
// deletes the NodeClaim of a Node with an interruption notice.
func (c *Controller) Reconcile(ctx context.Context, node *corev1.Node) (reconcile.Result, error) {
	raw := node.Annotations[NoticeAnnotationKey]
	if raw == "" {
		return reconcile.Result{}, nil
	}
	reclaimAt, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("parsing %s %q: %w", NoticeAnnotationKey, raw, err))
	}
	nodeClaim, err := index.NodeClaimForProviderID(ctx, c.kubeClient, node.Spec.ProviderID)
	if err != nil || nodeClaim == nil || !nodeClaim.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, err
	}
	key := cloudprovider.OfferingKey{
		InstanceType: nodeClaim.Labels[corev1.LabelInstanceTypeStable],
		Zone:         nodeClaim.Labels[corev1.LabelTopologyZone],
		CapacityType: nodeClaim.Labels[karpv1.CapacityTypeLabelKey],
	}
	if c.offerings != nil && key.InstanceType != "" {
		c.offerings.MarkOfferingUnavailable(ctx, key)
	}
	if c.replaceFirst {
		by, ok, err := interruption.ReplaceByForNodeClaim(ctx, c.kubeClient, nodeClaim, c.clock.Now(), reclaimAt)
		if err != nil {
			return reconcile.Result{}, err
		}
		if ok {
			return reconcile.Result{}, c.replaceFirstBy(ctx, node, nodeClaim, key, reclaimAt, by)
		}
	}
	deleted, err := interruption.Terminate(ctx, c.kubeClient, nodeClaim, reclaimAt, metrics.ReasonInterrupted)
	if err != nil || !deleted {
		return reconcile.Result{}, err
	}
	left := reclaimAt.Sub(c.clock.Now()).Round(time.Second)
	c.recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonSpotInterrupted, "Interrupt",
		"Node received an interruption notice; its instance is reclaimed at %s", reclaimAt.UTC().Format(time.RFC3339))
	c.recorder.Eventf(nodeClaim, nil, corev1.EventTypeWarning, ReasonTerminatingOnInterruption, "Interrupt",
		"Terminating on interruption: replacing the node and draining it within %s; offering %s unavailable for a while", left, key)
	log.FromContext(ctx).Info("disrupting nodeclaim", "reason", metrics.ReasonInterrupted, "NodeClaim", klog.KObj(nodeClaim),
		"offering", key.String(), "reclaimIn", left.String())
	return reconcile.Result{}, nil
}

// replaceFirstBy marks the NodeClaim to be replaced first and deleted by
// the given time, its drain ending at reclaimAt.
func (c *Controller) replaceFirstBy(ctx context.Context, node *corev1.Node, nodeClaim *karpv1.NodeClaim, key cloudprovider.OfferingKey, reclaimAt, by time.Time) error {
	marked, err := interruption.ReplaceFirst(ctx, c.kubeClient, nodeClaim, reclaimAt, by, metrics.ReasonInterrupted)
	if err != nil || !marked {
		return err
	}
	c.recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonSpotInterrupted, "Interrupt",
		"Node received an interruption notice; its instance is reclaimed at %s", reclaimAt.UTC().Format(time.RFC3339))
	c.recorder.Eventf(nodeClaim, nil, corev1.EventTypeWarning, ReasonTerminatingOnInterruption, "Interrupt",
		"Terminating on interruption: launching the replacement first, draining the node once it is initialized or at %s at the latest; offering %s unavailable for a while",
		by.UTC().Format(time.RFC3339), key)
	log.FromContext(ctx).Info("replacing interrupted nodeclaim first", "NodeClaim", klog.KObj(nodeClaim),
		"offering", key.String(), "replaceBy", by.UTC().Format(time.RFC3339), "reclaimAt", reclaimAt.UTC().Format(time.RFC3339))
	return nil
}
