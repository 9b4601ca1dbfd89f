package instancestatus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/smithy-go"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/interruption"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/singleton"
)

// Interval is how often EC2 is asked (upstream's).
const Interval = time.Minute

// actor takes a message's action on the NodeClaims of its instances
// (interruption.Handler).
type actor interface {
	Act(ctx context.Context, msgs []interruption.Message) (found []bool, err error)
}

// Controller polls EC2 for unhealthy instances and replaces their
// NodeClaims.
type Controller struct {
	ec2   EC2API
	actor actor
	clock clock.Clock

	mu sync.Mutex
	// counted holds the instances and categories already counted in the
	// unhealthy metric; an entry no longer reported is dropped, so an
	// instance unhealthy again later counts again.
	counted map[counted]bool
}

type counted struct {
	instanceID string
	category   Category
}

// NewController builds the poll over api, acting through handler (the
// interruption package's, shared with the queue's controller).
func NewController(api EC2API, handler *interruption.Handler, clk clock.Clock) *Controller {
	return &Controller{ec2: api, actor: handler, clock: clk, counted: map[counted]bool{}}
}

// Name is the controller's name (upstream's).
func (c *Controller) Name() string { return "interruption.instancestatus" }

// Register registers the metrics and runs the poll as a singleton on the
// leader.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	if err := interruption.RegisterMetrics(crmetrics.Registry); err != nil {
		return fmt.Errorf("registering interruption metrics: %w", err)
	}
	err := builder.ControllerManagedBy(mgr).Named(c.Name()).WatchesRawSource(singleton.Source(c.Name())).
		Complete(conflict.Requeue(reconcile.Func(func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
			return c.Reconcile(ctx)
		})))
	if err != nil {
		return fmt.Errorf("registering instance status controller: %w", err)
	}
	return nil
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile polls EC2 once, acts on the unhealthy instances that have a
// NodeClaim and comes back after Interval. A failed call or action returns
// the error (the controller backs off); a call the account may not make is
// logged and the poll goes on, so granting the permission is enough.
func (c *Controller) Reconcile(ctx context.Context) (reconcile.Result, error) {
	// 1. Gather the statuses EC2 reports as impaired or with events.
	statuses, err := describe(ctx, c.ec2)
	if isUnauthorized(err) {
		log.FromContext(ctx).Error(err, "ec2:DescribeInstanceStatus is not allowed; grant it to replace instances that fail their status checks")
		return reconcile.Result{RequeueAfter: Interval}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	// 2. Decide which are unhealthy, one message per category.
	var msgs []interruption.Message
	var categories []counted
	for _, u := range Decide(statuses, c.clock.Now()) {
		for _, category := range u.Categories {
			msgs = append(msgs, interruption.Message{Kind: kinds[category], InstanceIDs: []string{u.InstanceID}})
			categories = append(categories, counted{instanceID: u.InstanceID, category: category})
		}
	}
	// 3. Act through the interruption handler, and count the cluster's.
	found, err := c.actor.Act(ctx, msgs)
	c.count(ctx, categories, found)
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: Interval}, nil
}

// count increments the unhealthy metric for each category of an instance
// of the cluster not counted yet, and forgets those no longer reported.
func (c *Controller) count(ctx context.Context, categories []counted, found []bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := map[counted]bool{}
	for i, key := range categories {
		if !found[i] {
			continue
		}
		now[key] = true
		if c.counted[key] {
			continue
		}
		log.FromContext(ctx).Info("detected unhealthy instance owned by cluster", "instanceID", key.instanceID, "category", string(key.category))
		interruption.InstanceStatusUnhealthyTotal.WithLabelValues(string(key.category)).Inc()
	}
	c.counted = now
}

// isUnauthorized reports whether err is EC2's answer to a call the
// caller's IAM policy does not allow.
func isUnauthorized(err error) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "UnauthorizedOperation"
}
