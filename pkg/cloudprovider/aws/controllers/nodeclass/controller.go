package nodeclass

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/conflict"
)

// step is one concern of the status: it mutates nodeClass in memory and
// says when it wants to look again.
type step interface {
	reconcile(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (reconcile.Result, error)
}

// Controller resolves EC2NodeClasses' status.
type Controller struct {
	kubeClient client.Client
	clock      clock.Clock
	// steps run in upstream's order; later steps read what earlier ones set.
	steps []step
	// dryRun's verdicts are forgotten when their class is deleted.
	dryRun *DryRun
}

var _ reconcile.ObjectReconciler[*awsv1.EC2NodeClass] = (*Controller)(nil)

// Providers are the discovery providers and AWS clients the controller
// resolves status with. The operator builds them once and shares the
// providers with the launch path, so both read the same caches.
type Providers struct {
	// AMIs is an *ami.Provider.
	AMIs amiProvider
	// Subnets is a *subnet.Provider.
	Subnets subnetProvider
	// SecurityGroups is a *securitygroup.Provider.
	SecurityGroups securityGroupProvider
	// CapacityReservations is a *capacityreservation.Provider, or nil when
	// the ReservedCapacity feature gate is off.
	CapacityReservations capacityReservationProvider
	// Version is a *version.Provider; it names the Kubernetes version in
	// messages about aliases.
	Version versionSource
	// InstanceProfiles is an *instanceprofile.Provider.
	InstanceProfiles instanceProfileProvider
	// PlacementGroups is a *placementgroup.Provider; without it a class
	// with a placementGroupSelector is not ready.
	PlacementGroups placementGroupProvider
	// KubeletExpressions is a *kubeletcel.Environment when the
	// NodeClassCEL AWS gate is on; nil refuses CEL expressions in
	// spec.kubelet (KubeletExpressionsDisabled).
	KubeletExpressions expressionCompiler
	// DryRun checks the launch calls are authorized before
	// ValidationSucceeded is True; nil (--disable-dry-run) skips it.
	DryRun *DryRun
}

// NewController builds the EC2NodeClass status controller.
func NewController(kubeClient client.Client, recorder events.EventRecorder, clk clock.Clock, providers Providers) *Controller {
	r := reporter{recorder: recorder, clock: clk}
	return &Controller{
		kubeClient: kubeClient,
		clock:      clk,
		dryRun:     providers.DryRun,
		steps: []step{
			// status.amis and AMIsReady.
			&amiStep{amis: providers.AMIs, version: providers.Version, report: r},
			// CapacityReservationsReady.
			&capacityReservationStep{reservations: providers.CapacityReservations, report: r},
			// status.placementGroup and PlacementGroupReady.
			&placementGroupStep{groups: providers.PlacementGroups, report: r},
			// status.subnets and SubnetsReady.
			&subnetStep{subnets: providers.Subnets, report: r},
			// status.securityGroups and SecurityGroupsReady.
			&securityGroupStep{securityGroups: providers.SecurityGroups, report: r},
			// status.instanceProfile and InstanceProfileReady.
			&instanceProfileStep{profiles: providers.InstanceProfiles, report: r},
			// ValidationSucceeded, once the others are known.
			&validationStep{report: r, expressions: providers.KubeletExpressions, dryRun: providers.DryRun},
		},
	}
}

// Name is the controller's name.
func (c *Controller) Name() string { return "ec2nodeclass.status" }

// Register watches EC2NodeClasses. NodeClasses are resolved concurrently
// (upstream runs ten workers): one waiting on a slow AWS call does not hold
// up the others.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		For(&awsv1.EC2NodeClass{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
}

// +kubebuilder:rbac:groups=karpenter.k8s.aws,resources=ec2nodeclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.k8s.aws,resources=ec2nodeclasses/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile resolves the NodeClass's status and patches it once.
func (c *Controller) Reconcile(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (reconcile.Result, error) {
	if !nodeClass.DeletionTimestamp.IsZero() {
		c.dryRun.forget(nodeClass.Name)
		return reconcile.Result{}, nil
	}
	stored := nodeClass.DeepCopy()
	reporter{clock: c.clock}.conditions(nodeClass).Initialize()
	var errs []error
	var requeue time.Duration
	for _, s := range c.steps {
		res, err := s.reconcile(ctx, nodeClass)
		errs = append(errs, err)
		if res.RequeueAfter > 0 && (requeue == 0 || res.RequeueAfter < requeue) {
			requeue = res.RequeueAfter
		}
	}
	if !equality.Semantic.DeepEqual(stored.Status, nodeClass.Status) {
		if err := c.kubeClient.Status().Patch(ctx, nodeClass, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			errs = append(errs, client.IgnoreNotFound(fmt.Errorf("patching ec2nodeclass status: %w", err)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}
