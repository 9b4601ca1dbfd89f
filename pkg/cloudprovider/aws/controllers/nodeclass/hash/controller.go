// Package hash keeps the drift hash annotations of each EC2NodeClass
// current, as upstream's nodeclass.hash controller does:
// karpenter.k8s.aws/ec2nodeclass-hash holds EC2NodeClass.Hash() and
// karpenter.k8s.aws/ec2nodeclass-hash-version the hashing scheme's
// version. NodeClaims carry the same two annotations from their launch.
//
// When the NodeClass was last hashed under another scheme (a karp upgrade
// that changes the hash, or a cluster moving from Karpenter, whose
// NodeClaims carry its own version), the NodeClaims of the NodeClass are
// migrated first: each gets the current version and, unless it is already
// Drifted, the current hash. Without that every existing node would look
// drifted after the upgrade and be replaced for no change of spec.
package hash

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/conflict"
)

// Controller maintains the hash annotations.
type Controller struct {
	kubeClient client.Client
}

var _ reconcile.ObjectReconciler[*awsv1.EC2NodeClass] = (*Controller)(nil)

// NewController builds the hash controller.
func NewController(kubeClient client.Client) *Controller {
	return &Controller{kubeClient: kubeClient}
}

// Name is the controller's name.
func (c *Controller) Name() string { return "ec2nodeclass.hash" }

// Register watches EC2NodeClasses.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		For(&awsv1.EC2NodeClass{}).
		Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
}

// +kubebuilder:rbac:groups=karpenter.k8s.aws,resources=ec2nodeclasses,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;patch

// Reconcile migrates the NodeClaims of an old hash version, then writes the
// NodeClass's annotations.
func (c *Controller) Reconcile(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (reconcile.Result, error) {
	if !nodeClass.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	hash := nodeClass.Hash()
	if nodeClass.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] != awsv1.EC2NodeClassHashVersion {
		if err := c.migrateNodeClaims(ctx, nodeClass.Name, hash); err != nil {
			return reconcile.Result{}, err
		}
	}
	stored := nodeClass.DeepCopy()
	if nodeClass.Annotations == nil {
		nodeClass.Annotations = map[string]string{}
	}
	nodeClass.Annotations[awsv1.AnnotationEC2NodeClassHash] = hash
	nodeClass.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = awsv1.EC2NodeClassHashVersion
	if equality.Semantic.DeepEqual(stored.Annotations, nodeClass.Annotations) {
		return reconcile.Result{}, nil
	}
	if err := c.kubeClient.Patch(ctx, nodeClass, client.MergeFrom(stored)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching ec2nodeclass hash annotations: %w", err))
	}
	return reconcile.Result{}, nil
}

// migrateNodeClaims moves the NodeClass's NodeClaims to the current hash
// version; those not already drifted take the current hash.
func (c *Controller) migrateNodeClaims(ctx context.Context, nodeClassName, hash string) error {
	var list karpv1.NodeClaimList
	if err := c.kubeClient.List(ctx, &list); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	var errs []error
	for i := range list.Items {
		nodeClaim := &list.Items[i]
		ref := nodeClaim.Spec.NodeClassRef
		if ref == nil || ref.Group != awsv1.Group || ref.Kind != awsv1.Kind || ref.Name != nodeClassName {
			continue
		}
		if nodeClaim.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] == awsv1.EC2NodeClassHashVersion {
			continue
		}
		stored := nodeClaim.DeepCopy()
		if nodeClaim.Annotations == nil {
			nodeClaim.Annotations = map[string]string{}
		}
		nodeClaim.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = awsv1.EC2NodeClassHashVersion
		if !nodeClaim.StatusConditions().IsTrue(karpv1.ConditionTypeDrifted) {
			nodeClaim.Annotations[awsv1.AnnotationEC2NodeClassHash] = hash
		}
		if err := c.kubeClient.Patch(ctx, nodeClaim, client.MergeFrom(stored)); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("migrating the hash of nodeclaim %s: %w", nodeClaim.Name, err))
		}
	}
	return errors.Join(errs...)
}
