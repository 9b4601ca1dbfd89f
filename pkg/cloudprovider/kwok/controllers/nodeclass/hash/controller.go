package hash

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok"
	"github.com/karp-autoscaler/karp/pkg/conflict"
)

// Controller re-stamps the NodeClaims of a KWOKNodeClass whose hash is of
// another algorithm version.
type Controller struct {
	kubeClient client.Client
}

var _ reconcile.ObjectReconciler[*kwokv1alpha1.KWOKNodeClass] = (*Controller)(nil)

// NewController builds the controller.
func NewController(kubeClient client.Client) *Controller {
	return &Controller{kubeClient: kubeClient}
}

// Name is the controller's name.
func (c *Controller) Name() string { return "nodeclass.hash" }

// Register watches KWOKNodeClasses.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		For(&kwokv1alpha1.KWOKNodeClass{}).
		Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
}

// +kubebuilder:rbac:groups=karpenter.kwok.sh,resources=kwoknodeclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;patch

// Reconcile re-stamps the class's NodeClaims of an older hash version.
func (c *Controller) Reconcile(ctx context.Context, nodeClass *kwokv1alpha1.KWOKNodeClass) (reconcile.Result, error) {
	if !nodeClass.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	var list karpv1.NodeClaimList
	if err := c.kubeClient.List(ctx, &list); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeclaims: %w", err)
	}
	current := kwok.NodeClassHash(nodeClass)
	var errs []error
	for i := range list.Items {
		nc := &list.Items[i]
		if !outdated(nc, nodeClass) {
			continue
		}
		stored := nc.DeepCopy()
		nc.Annotations[kwok.NodeClassHashVersionAnnotationKey] = kwok.NodeClassHashVersion
		// Which hashes differ cannot be told across algorithms: a drifted
		// NodeClaim keeps its old hash and stays drifted.
		if nc.StatusConditions().Get(karpv1.ConditionTypeDrifted) == nil {
			nc.Annotations[kwok.NodeClassHashAnnotationKey] = current
		}
		if err := c.kubeClient.Patch(ctx, nc, client.MergeFrom(stored)); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("re-stamping nodeclaim %s: %w", nc.Name, err))
		}
	}
	return reconcile.Result{}, errors.Join(errs...)
}

// outdated reports whether the NodeClaim was launched with nodeClass and
// carries a hash of another algorithm version.
func outdated(nc *karpv1.NodeClaim, nodeClass *kwokv1alpha1.KWOKNodeClass) bool {
	ref := nc.Spec.NodeClassRef
	if ref == nil || ref.Group != kwokv1alpha1.Group || ref.Kind != kwokv1alpha1.Kind || ref.Name != nodeClass.Name {
		return false
	}
	if _, ok := nc.Annotations[kwok.NodeClassHashAnnotationKey]; !ok {
		return false
	}
	return nc.Annotations[kwok.NodeClassHashVersionAnnotationKey] != kwok.NodeClassHashVersion
}
