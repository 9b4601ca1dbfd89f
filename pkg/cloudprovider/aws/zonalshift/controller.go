package zonalshift

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/singleton"
)

// Period is how often the zonal shifts are read, as upstream.
const Period = 30 * time.Second

// shiftReader refreshes and answers the active shifts (Provider).
type shiftReader interface {
	Update(ctx context.Context) error
	ShiftedZones() sets.Set[string]
}

// Controller refreshes the zonal shifts every Period and publishes an
// event on each NodePool a shift that began or ended concerns.
type Controller struct {
	kubeClient client.Client
	recorder   events.EventRecorder
	shifts     shiftReader

	// previous are the zone IDs shifted at the last published pass; only
	// the reconciler's goroutine touches it.
	previous sets.Set[string]
}

var _ reconcile.Reconciler = (*Controller)(nil)

// NewController returns the controller over the provider.
func NewController(kubeClient client.Client, recorder events.EventRecorder, shifts shiftReader) *Controller {
	return &Controller{kubeClient: kubeClient, recorder: recorder, shifts: shifts, previous: sets.New[string]()}
}

// Name is upstream's controller name.
func (c *Controller) Name() string { return "zonalshift" }

// Register runs the singleton loop under the manager.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		WatchesRawSource(singleton.Source(c.Name())).
		Complete(conflict.Requeue(c))
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.k8s.aws,resources=ec2nodeclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile reads the shifts, publishes the transitions since the last
// pass and comes back after Period.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	// 1. Read ARC; the cache's offerings follow at once.
	if err := c.shifts.Update(ctx); err != nil {
		return reconcile.Result{}, fmt.Errorf("updating zonal shifts: %w", err)
	}
	current := c.shifts.ShiftedZones()
	if current.Equal(c.previous) {
		return reconcile.Result{RequeueAfter: Period}, nil
	}
	// 2. Find the NodePools the transitions concern and tell them; the
	// transitions are kept for the next pass when the lookup fails.
	pools, err := c.poolZones(ctx)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("publishing zonal shift events: %w", err)
	}
	for _, e := range transitionEvents(c.previous, current, pools) {
		c.recorder.Eventf(e.nodePool, nil, e.kind, e.reason, "ZonalShift", "%s", e.message)
	}
	c.previous = current
	return reconcile.Result{RequeueAfter: Period}, nil
}

// poolZones are the NodePools with the zones of their EC2NodeClasses; a
// NodePool whose class is missing provisions nowhere and is left out.
func (c *Controller) poolZones(ctx context.Context) ([]poolZones, error) {
	nodePools := &karpv1.NodePoolList{}
	if err := c.kubeClient.List(ctx, nodePools); err != nil {
		return nil, fmt.Errorf("listing nodepools: %w", err)
	}
	var out []poolZones
	for i := range nodePools.Items {
		nodePool := &nodePools.Items[i]
		ref := nodePool.Spec.Template.Spec.NodeClassRef
		if ref == nil {
			continue
		}
		nodeClass := &awsv1.EC2NodeClass{}
		if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: ref.Name}, nodeClass); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("getting EC2NodeClass %s of NodePool %s: %w", ref.Name, nodePool.Name, err)
		}
		out = append(out, poolZones{nodePool: nodePool, zones: nodeClass.ZoneInfo()})
	}
	return out, nil
}
