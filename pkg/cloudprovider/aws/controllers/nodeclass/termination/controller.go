package termination

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/index"
)

// ReasonWaitingOnNodeClaimTermination is the event reason of a deleted
// NodeClass whose NodeClaims are not gone yet (upstream's).
const ReasonWaitingOnNodeClaimTermination = "WaitingOnNodeClaimTermination"

// waitInterval is how often a NodeClass waiting on its NodeClaims is
// looked at again without a NodeClaim event (upstream's).
const waitInterval = 10 * time.Minute

// maxNamed is how many waited-on NodeClaims the event names.
const maxNamed = 5

// launchTemplates deletes the launch templates of a NodeClass (package
// launchtemplate's Provider).
type launchTemplates interface {
	DeleteAll(ctx context.Context, nodeClassName string) error
}

// instanceProfiles deletes the instance profiles karp made for a NodeClass
// (package instanceprofile's Provider).
type instanceProfiles interface {
	Delete(ctx context.Context, nodeClass *awsv1.EC2NodeClass) error
}

// Controller adds the termination finalizer and runs the cleanup.
type Controller struct {
	kubeClient      client.Client
	recorder        events.EventRecorder
	launchTemplates launchTemplates
	profiles        instanceProfiles
}

var _ reconcile.ObjectReconciler[*awsv1.EC2NodeClass] = (*Controller)(nil)

// NewController builds the controller. profiles is nil when karp must not
// call IAM on deletion (--isolated-vpc).
func NewController(kubeClient client.Client, recorder events.EventRecorder, launchTemplates launchTemplates, profiles instanceProfiles) *Controller {
	return &Controller{kubeClient: kubeClient, recorder: recorder, launchTemplates: launchTemplates, profiles: profiles}
}

// Name is the controller's name.
func (c *Controller) Name() string { return "ec2nodeclass.termination" }

// Register watches EC2NodeClasses and, to wake a waiting deletion, the
// removal of NodeClaims that reference one (only removals: the many
// status updates of live NodeClaims change nothing here).
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		For(&awsv1.EC2NodeClass{}).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			ref := o.(*karpv1.NodeClaim).Spec.NodeClassRef
			if !isEC2NodeClass(ref) {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: ref.Name}}}
		}), builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(event.CreateEvent) bool { return false },
			UpdateFunc:  func(event.UpdateEvent) bool { return false },
			DeleteFunc:  func(event.DeleteEvent) bool { return true },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
}

// +kubebuilder:rbac:groups=karpenter.k8s.aws,resources=ec2nodeclasses,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile adds the finalizer to a live NodeClass and finalizes a deleted one.
func (c *Controller) Reconcile(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (reconcile.Result, error) {
	if !nodeClass.DeletionTimestamp.IsZero() {
		return c.finalize(ctx, nodeClass)
	}
	if controllerutil.ContainsFinalizer(nodeClass, awsv1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	stored := nodeClass.DeepCopy()
	controllerutil.AddFinalizer(nodeClass, awsv1.TerminationFinalizer)
	if err := c.kubeClient.Patch(ctx, nodeClass, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("adding ec2nodeclass finalizer: %w", err))
	}
	return reconcile.Result{}, nil
}

// finalize waits for the NodeClaims, cleans up, and releases the finalizer.
func (c *Controller) finalize(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(nodeClass, awsv1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	// 1. Wait for the NodeClaims.
	waiting, err := c.nodeClaims(ctx, nodeClass.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(waiting) > 0 {
		message := waitMessage(waiting)
		log.FromContext(ctx).V(1).Info("waiting on nodeclaims before deleting ec2nodeclass", "nodeClaims", len(waiting))
		if c.recorder != nil {
			c.recorder.Eventf(nodeClass, nil, corev1.EventTypeNormal, ReasonWaitingOnNodeClaimTermination, "Finalize", "%s", message)
		}
		return reconcile.Result{RequeueAfter: waitInterval}, nil
	}
	// 2. Clean up what karp made for the NodeClass.
	if err := c.launchTemplates.DeleteAll(ctx, nodeClass.Name); err != nil {
		return reconcile.Result{}, fmt.Errorf("deleting launch templates: %w", err)
	}
	if c.profiles != nil {
		if err := c.profiles.Delete(ctx, nodeClass); err != nil {
			return reconcile.Result{}, fmt.Errorf("deleting instance profiles: %w", err)
		}
	}
	// 3. Let the API server delete it.
	stored := nodeClass.DeepCopy()
	controllerutil.RemoveFinalizer(nodeClass, awsv1.TerminationFinalizer)
	if err := c.kubeClient.Patch(ctx, nodeClass, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("removing ec2nodeclass finalizer: %w", err))
	}
	log.FromContext(ctx).Info("deleted ec2nodeclass", "EC2NodeClass", klog.KObj(nodeClass))
	return reconcile.Result{}, nil
}

// nodeClaims returns the names of the NodeClaims referencing the NodeClass.
func (c *Controller) nodeClaims(ctx context.Context, name string) ([]string, error) {
	var list karpv1.NodeClaimList
	if err := c.kubeClient.List(ctx, &list, client.MatchingFields{index.NodeClaimNodeClassName: name}); err != nil {
		return nil, fmt.Errorf("listing nodeclaims of ec2nodeclass %s: %w", name, err)
	}
	var out []string
	for i := range list.Items {
		if isEC2NodeClass(list.Items[i].Spec.NodeClassRef) {
			out = append(out, list.Items[i].Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

func isEC2NodeClass(ref *karpv1.NodeClassReference) bool {
	return ref != nil && ref.Group == awsv1.Group && ref.Kind == awsv1.Kind
}

// waitMessage is upstream's: "Waiting on NodeClaim termination for a, b,
// c and 2 other(s)".
func waitMessage(names []string) string {
	shown := names[:min(len(names), maxNamed)]
	message := "Waiting on NodeClaim termination for " + strings.Join(shown, ", ")
	if rest := len(names) - len(shown); rest > 0 {
		message += fmt.Sprintf(" and %d other(s)", rest)
	}
	return message
}
