package garbagecollection

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/singleton"
)

const (
	// interval is the time between passes (upstream's).
	interval = 30 * time.Minute
	// protection is how long a new profile is kept regardless.
	protection = time.Hour
)

// profiles lists and deletes the cluster's managed instance profiles
// (package instanceprofile's Provider).
type profiles interface {
	List(ctx context.Context) ([]iamtypes.InstanceProfile, error)
	Remove(ctx context.Context, profile iamtypes.InstanceProfile) error
	ManagedName(nodeClassName string) string
}

// Controller is the singleton instance-profile garbage collector.
type Controller struct {
	reader   client.Reader
	profiles profiles
	clock    clock.PassiveClock
}

// NewController builds the collector; reader should read uncached (a stale
// view must not delete a profile in use).
func NewController(reader client.Reader, profiles profiles, clk clock.PassiveClock) *Controller {
	return &Controller{reader: reader, profiles: profiles, clock: clk}
}

// Name is the controller's name.
func (c *Controller) Name() string { return "instanceprofile.garbagecollection" }

// Register runs the singleton loop under the manager (leader only).
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		WatchesRawSource(singleton.Source(c.Name())).
		Complete(conflict.Requeue(c))
}

// +kubebuilder:rbac:groups=karpenter.k8s.aws,resources=ec2nodeclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch

// Reconcile runs one pass and schedules the next.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	if err := c.Collect(ctx); err != nil {
		// Retried with backoff; a requeue beside an error is dropped.
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: interval}, nil
}

// Collect runs one pass: 1. list the profiles and what uses them; 2.
// delete the unused ones past the protection window.
func (c *Controller) Collect(ctx context.Context) error {
	all, err := c.profiles.List(ctx)
	if err != nil {
		return err
	}
	if len(all) == 0 {
		return nil
	}
	inUse, err := c.inUse(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, profile := range all {
		name := aws.ToString(profile.InstanceProfileName)
		if inUse.Has(name) || c.clock.Since(aws.ToTime(profile.CreateDate)) < protection {
			continue
		}
		if err := c.profiles.Remove(ctx, profile); err != nil {
			errs = append(errs, err)
			continue
		}
		log.FromContext(ctx).Info("garbage collected instance profile", "instanceProfile", name)
	}
	return errors.Join(errs...)
}

// inUse names the profiles EC2NodeClasses and NodeClaims use or are about
// to use.
func (c *Controller) inUse(ctx context.Context) (sets.Set[string], error) {
	var nodeClasses awsv1.EC2NodeClassList
	if err := c.reader.List(ctx, &nodeClasses); err != nil {
		return nil, fmt.Errorf("listing ec2nodeclasses: %w", err)
	}
	var nodeClaims karpv1.NodeClaimList
	if err := c.reader.List(ctx, &nodeClaims); err != nil {
		return nil, fmt.Errorf("listing nodeclaims: %w", err)
	}
	out := sets.New[string]()
	for i := range nodeClasses.Items {
		nc := &nodeClasses.Items[i]
		if nc.Spec.Role != "" {
			out.Insert(c.profiles.ManagedName(nc.Name))
		}
		if nc.Status.InstanceProfile != "" {
			out.Insert(nc.Status.InstanceProfile)
		}
	}
	for i := range nodeClaims.Items {
		if name := nodeClaims.Items[i].Annotations[awsv1.AnnotationInstanceProfile]; name != "" {
			out.Insert(name)
		}
	}
	return out, nil
}
