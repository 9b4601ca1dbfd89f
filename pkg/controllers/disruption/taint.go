package disruption

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// setDisrupted adds (on) or removes the karpenter.sh/disrupted taint on the
// node, retrying conflicts on a fresh copy.
func (c *Controller) setDisrupted(ctx context.Context, nodeName string, on bool) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node := &corev1.Node{}
		if err := c.kubeClient.Get(ctx, types.NamespacedName{Name: nodeName}, node); err != nil {
			return err
		}
		stored := node.DeepCopy()
		node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == karpv1.DisruptedTaintKey })
		if on {
			node.Spec.Taints = append(node.Spec.Taints, karpv1.DisruptedNoScheduleTaint)
		}
		if equality.Semantic.DeepEqual(stored.Spec.Taints, node.Spec.Taints) {
			return nil
		}
		return c.kubeClient.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{}))
	})
	if err = client.IgnoreNotFound(err); err != nil {
		return fmt.Errorf("updating disrupted taint of node %s: %w", nodeName, err)
	}
	return nil
}

// setReason sets (reason != "") or removes the DisruptionReason condition of
// the NodeClaim, retrying conflicts on a fresh copy.
func (c *Controller) setReason(ctx context.Context, nodeClaimName string, reason karpv1.DisruptionReason) error {
	return c.patchNodeClaimStatus(ctx, nodeClaimName, func(nc *karpv1.NodeClaim) {
		if reason == "" {
			nc.StatusConditions().Clear(karpv1.ConditionTypeDisruptionReason)
			return
		}
		nc.StatusConditions().SetTrueWithReason(karpv1.ConditionTypeDisruptionReason, string(reason),
			"karp is disrupting the node: "+string(reason))
	})
}

// patchNodeClaimStatus applies mutate to a fresh copy of the NodeClaim's
// status and patches it when it changed.
func (c *Controller) patchNodeClaimStatus(ctx context.Context, name string, mutate func(*karpv1.NodeClaim)) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		nc := &karpv1.NodeClaim{}
		if err := c.kubeClient.Get(ctx, types.NamespacedName{Name: name}, nc); err != nil {
			return err
		}
		stored := nc.DeepCopy()
		mutate(nc)
		if equality.Semantic.DeepEqual(stored.Status, nc.Status) {
			return nil
		}
		return c.kubeClient.Status().Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{}))
	})
	if err = client.IgnoreNotFound(err); err != nil {
		return fmt.Errorf("patching status of nodeclaim %s: %w", name, err)
	}
	return nil
}
