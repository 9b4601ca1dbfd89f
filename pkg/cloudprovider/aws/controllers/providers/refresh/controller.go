package refresh

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/singleton"
)

// Period is how often the tables are refreshed after the first time.
const Period = 12 * time.Hour

// updater refreshes one provider's tables from AWS.
type updater interface {
	Update(ctx context.Context) error
}

// Controller refreshes one provider on a schedule.
type Controller struct {
	name     string
	provider updater
}

// NewInstanceTypeController refreshes instance types and offerings
// (an instancetype.Provider).
func NewInstanceTypeController(provider updater) *Controller {
	return &Controller{name: "providers.instancetype", provider: provider}
}

// NewPricingController refreshes on-demand and spot prices (a
// pricing.Provider).
func NewPricingController(provider updater) *Controller {
	return &Controller{name: "providers.pricing", provider: provider}
}

// Name is the controller's name.
func (c *Controller) Name() string { return c.name }

// Register runs the singleton loop under the manager.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		WatchesRawSource(singleton.Source(c.Name())).
		Complete(conflict.Requeue(c))
}

// Reconcile refreshes the tables and schedules the next refresh.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	if err := c.provider.Update(ctx); err != nil {
		return reconcile.Result{}, fmt.Errorf("refreshing %s: %w", c.name, err)
	}
	return reconcile.Result{RequeueAfter: Period}, nil
}
