package hash

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/conflict"
)

// Controller stamps template hashes.
type Controller struct {
	kubeClient client.Client
}

var _ reconcile.ObjectReconciler[*karpv1.NodePool] = (*Controller)(nil)

// NewController builds the hash controller.
func NewController(kubeClient client.Client) *Controller {
	return &Controller{kubeClient: kubeClient}
}

// Name is the controller's name.
func (c *Controller) Name() string { return "nodepool.hash" }

// Register watches NodePool spec and annotation changes.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&karpv1.NodePool{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;patch

// Reconcile annotates the NodePool with its template hash and re-stamps
// NodeClaims whose hash is of an older algorithm version.
func (c *Controller) Reconcile(ctx context.Context, nodePool *karpv1.NodePool) (reconcile.Result, error) {
	if !nodePool.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	want := nodePool.Hash()
	if err := c.restampNodeClaims(ctx, nodePool, want); err != nil {
		return reconcile.Result{}, err
	}
	ann := nodePool.Annotations
	if ann[karpv1.NodePoolHashAnnotationKey] == want && ann[karpv1.NodePoolHashVersionAnnotationKey] == karpv1.NodePoolHashVersion {
		return reconcile.Result{}, nil
	}
	stored := nodePool.DeepCopy()
	setHash(&nodePool.ObjectMeta.Annotations, want)
	if err := c.kubeClient.Patch(ctx, nodePool, client.MergeFrom(stored)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("annotating nodepool hash: %w", err))
	}
	return reconcile.Result{}, nil
}

// restampNodeClaims gives the pool's NodeClaims whose hash version differs
// from the current one the current version and hash, so an algorithm change
// is not mistaken for drift. Only needed when the pool's own stamp is
// outdated. A NodeClaim already marked Drifted keeps its old hash (only the
// version moves): which hashes differ cannot be told across algorithms, so
// it stays drifted, as upstream Karpenter does.
func (c *Controller) restampNodeClaims(ctx context.Context, nodePool *karpv1.NodePool, hash string) error {
	if nodePool.Annotations[karpv1.NodePoolHashVersionAnnotationKey] == karpv1.NodePoolHashVersion {
		return nil
	}
	var list karpv1.NodeClaimList
	if err := c.kubeClient.List(ctx, &list, client.MatchingLabels{karpv1.NodePoolLabelKey: nodePool.Name}); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	var errs []error
	for i := range list.Items {
		nc := &list.Items[i]
		if nc.Annotations[karpv1.NodePoolHashVersionAnnotationKey] == karpv1.NodePoolHashVersion {
			continue
		}
		stored := nc.DeepCopy()
		claimHash := hash
		if nc.StatusConditions().Get(karpv1.ConditionTypeDrifted) != nil {
			claimHash = nc.Annotations[karpv1.NodePoolHashAnnotationKey]
		}
		setHash(&nc.ObjectMeta.Annotations, claimHash)
		if err := c.kubeClient.Patch(ctx, nc, client.MergeFrom(stored)); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("re-stamping nodeclaim %s: %w", nc.Name, err))
		}
	}
	return errors.Join(errs...)
}

func setHash(annotations *map[string]string, hash string) {
	if *annotations == nil {
		*annotations = map[string]string{}
	}
	(*annotations)[karpv1.NodePoolHashAnnotationKey] = hash
	(*annotations)[karpv1.NodePoolHashVersionAnnotationKey] = karpv1.NodePoolHashVersion
}
