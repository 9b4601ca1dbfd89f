package expiration

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/capacityreservation"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/index"
	"github.com/karp-autoscaler/karp/pkg/interruption"
	"github.com/karp-autoscaler/karp/pkg/singleton"
)

const (
	// Period is how often the reservations are looked at (upstream's).
	Period = time.Minute
	// ReclaimLead is how long before a capacity block's end EC2 starts
	// terminating its instances.
	ReclaimLead = 30 * time.Minute
	// Reason is the karpenter_nodeclaims_disrupted_total reason of the
	// deletions.
	Reason = "capacity_block_expiration"
)

// reservationGetter describes reservations by ID (capacityreservation's
// Provider): the active ones EC2 knows.
type reservationGetter interface {
	Get(ctx context.Context, ids ...string) ([]ec2types.CapacityReservation, error)
}

// Controller deletes the NodeClaims of expiring capacity blocks.
type Controller struct {
	kubeClient   client.Client
	reservations reservationGetter
	recorder     events.EventRecorder
	clock        clock.PassiveClock
}

// NewController builds the controller.
func NewController(kubeClient client.Client, reservations reservationGetter, recorder events.EventRecorder, clk clock.PassiveClock) *Controller {
	return &Controller{kubeClient: kubeClient, reservations: reservations, recorder: recorder, clock: clk}
}

// Name is the controller's name (upstream's).
func (c *Controller) Name() string { return "capacityreservation.expiration" }

// Register runs the singleton loop under the manager.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		WatchesRawSource(singleton.Source(c.Name())).
		Complete(conflict.Requeue(c))
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile deletes the NodeClaims whose capacity block is expiring.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	// 1. The NodeClaims in reservations, by reservation.
	var list karpv1.NodeClaimList
	if err := c.kubeClient.List(ctx, &list, client.HasLabels{awsv1.LabelCapacityReservationID}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeclaims: %w", err)
	}
	byReservation := map[string][]*karpv1.NodeClaim{}
	for i := range list.Items {
		nodeClaim := &list.Items[i]
		if ref := nodeClaim.Spec.NodeClassRef; ref == nil || ref.Group != awsv1.Group || ref.Kind != awsv1.Kind {
			continue
		}
		id := nodeClaim.Labels[awsv1.LabelCapacityReservationID]
		byReservation[id] = append(byReservation[id], nodeClaim)
	}
	if len(byReservation) == 0 {
		return reconcile.Result{RequeueAfter: Period}, nil
	}
	// 2. Which of those reservations are expiring capacity blocks.
	ids := make([]string, 0, len(byReservation))
	for id := range byReservation {
		ids = append(ids, id)
	}
	reservations, err := c.reservations.Get(ctx, ids...)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("describing capacity reservations: %w", err)
	}
	now := c.clock.Now()
	var errs []error
	for _, r := range reservations {
		if !capacityreservation.Expiring(r, now) {
			continue
		}
		// 3. Delete their NodeClaims, to be drained before EC2 reclaims.
		for _, nodeClaim := range byReservation[aws.ToString(r.CapacityReservationId)] {
			if err := c.expire(ctx, nodeClaim, r); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return reconcile.Result{}, errors.Join(errs...)
	}
	return reconcile.Result{RequeueAfter: capacityreservation.RequeueAfter(reservations, now, Period)}, nil
}

// expire deletes the NodeClaim with EC2's reclaim time as its termination
// deadline, and publishes why once.
func (c *Controller) expire(ctx context.Context, nodeClaim *karpv1.NodeClaim, r ec2types.CapacityReservation) error {
	end := aws.ToTime(r.EndDate)
	reclaimAt := end.Add(-ReclaimLead)
	deleted, err := interruption.Terminate(ctx, c.kubeClient, nodeClaim, reclaimAt, Reason)
	if err != nil {
		return fmt.Errorf("deleting nodeclaim %s of expiring capacity block %s: %w", nodeClaim.Name, aws.ToString(r.CapacityReservationId), err)
	}
	if !deleted {
		return nil
	}
	id := aws.ToString(r.CapacityReservationId)
	log.FromContext(ctx).Info("initiating delete for capacity block expiration", "NodeClaim", klog.KObj(nodeClaim),
		"capacityReservationID", id, "endTime", end.UTC().Format(time.RFC3339))
	msg := expiringMessage(id, end, reclaimAt)
	c.recorder.Eventf(nodeClaim, nil, corev1.EventTypeWarning, ReasonCapacityBlockExpiring, "Disrupt", "%s", msg)
	if nodeClaim.Status.ProviderID == "" {
		return nil
	}
	var nodes corev1.NodeList
	if err := c.kubeClient.List(ctx, &nodes, client.MatchingFields{index.NodeProviderID: nodeClaim.Status.ProviderID}); err != nil {
		// The NodeClaim is deleting; only the Node's event is lost.
		log.FromContext(ctx).Error(err, "listing the node of an expiring nodeclaim", "NodeClaim", klog.KObj(nodeClaim))
		return nil
	}
	for i := range nodes.Items {
		c.recorder.Eventf(&nodes.Items[i], nil, corev1.EventTypeWarning, ReasonCapacityBlockExpiring, "Disrupt", "%s", msg)
	}
	return nil
}
