// Package ssm runs the loop that notices AWS pulling an EKS-optimized AMI
// release. Alias SSM parameters are cached for a day; every 30 minutes this
// controller describes the AMIs the cached "latest" parameters name and
// forgets the parameters whose AMI is now deprecated or gone, so the next
// NodeClass reconcile reads the parameter again and moves to the release
// AWS now recommends (upstream's providers.ssm.invalidation).
package ssm

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/singleton"
)

// Period is how often the cached parameters are checked.
const Period = 30 * time.Minute

// invalidator forgets cached parameters whose AMI was deprecated (an
// ami.Provider).
type invalidator interface {
	InvalidateDeprecated(ctx context.Context) ([]string, error)
}

// Controller checks the cached alias parameters on a schedule.
type Controller struct {
	amis invalidator
}

// NewController builds the invalidation loop over an ami.Provider.
func NewController(amis invalidator) *Controller {
	return &Controller{amis: amis}
}

// Name is the controller's name.
func (c *Controller) Name() string { return "providers.ssm.invalidation" }

// Register runs the singleton loop under the manager.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		WatchesRawSource(singleton.Source(c.Name())).
		Complete(conflict.Requeue(c))
}

// Reconcile forgets the parameters of deprecated AMIs and schedules the
// next check.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	forgotten, err := c.amis.InvalidateDeprecated(ctx)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("checking cached ssm parameters for deprecated amis: %w", err)
	}
	if len(forgotten) > 0 {
		log.FromContext(ctx).Info("forgot ssm parameters whose AMI was deprecated", "parameters", forgotten)
	}
	return reconcile.Result{RequeueAfter: Period}, nil
}
