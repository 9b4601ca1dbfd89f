package interruption

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// Rebalance reasons and messages of the RebalanceRecommended condition.
const (
	rebalanceConditionReason  = "SpotRebalanceRecommendation"
	rebalanceConditionMessage = "EC2 recommended rebalancing the spot instance; karp replaces the node before it is interrupted"
)

// rebalance handles a rebalance recommendation for a spot NodeClaim whose
// NodePool opted in (karp.sh/spot-rebalance: replace): it marks the spot
// offering unavailable, so the replacement lands elsewhere, then sets the
// NodeClaim's RebalanceRecommended condition for the disruption controller,
// which launches the replacement and drains the node once it is
// initialized. The offering is marked first: the disruption pass that sees
// the condition must already see the offering gone.
//
// It is idempotent, as EC2 may send the recommendation again: a NodeClaim
// already marked, already being disrupted (DisruptionReason) or deleting,
// not spot, or of a pool that did not opt in, is left as it is (only the
// event is published, by the caller).
func (c *Handler) rebalance(ctx context.Context, nodeClaim *karpv1.NodeClaim) error {
	if skip := rebalanceSkip(nodeClaim); skip != "" {
		log.FromContext(ctx).V(1).Info("not replacing on rebalance recommendation", "why", skip)
		return nil
	}
	replace, err := c.poolReplaces(ctx, nodeClaim.Labels[karpv1.NodePoolLabelKey])
	if err != nil || !replace {
		return err
	}
	marked := false
	err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		fresh := &karpv1.NodeClaim{}
		if err := c.kubeClient.Get(ctx, client.ObjectKeyFromObject(nodeClaim), fresh); err != nil {
			return err
		}
		// Another worker (a copy of the message in the same batch) or an
		// earlier message may have marked it since the batch was read.
		if rebalanceSkip(fresh) != "" || fresh.UID != nodeClaim.UID {
			return nil
		}
		c.markOffering(ctx, fresh, KindRebalanceRecommendation)
		stored := fresh.DeepCopy()
		fresh.StatusConditions().WithClock(c.clock).SetTrueWithReason(karpv1.ConditionTypeRebalanceRecommended,
			rebalanceConditionReason, rebalanceConditionMessage)
		if equality.Semantic.DeepEqual(stored.Status, fresh.Status) {
			return nil
		}
		if err := c.kubeClient.Status().Patch(ctx, fresh, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
		marked = true
		return nil
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("marking nodeclaim %s for replacement on rebalance recommendation: %w", nodeClaim.Name, err)
	}
	if marked {
		log.FromContext(ctx).Info("marked nodeclaim for replacement on rebalance recommendation",
			"instanceType", nodeClaim.Labels[corev1.LabelInstanceTypeStable], "zone", nodeClaim.Labels[corev1.LabelTopologyZone])
	}
	return nil
}

// rebalanceSkip says why a recommendation changes nothing for the
// NodeClaim, or "" when it is to be marked.
func rebalanceSkip(nodeClaim *karpv1.NodeClaim) string {
	conds := nodeClaim.StatusConditions()
	switch {
	case !nodeClaim.DeletionTimestamp.IsZero():
		return "the nodeclaim is deleting"
	case nodeClaim.Labels[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeSpot:
		return "the nodeclaim is not spot"
	case conds.IsTrue(karpv1.ConditionTypeRebalanceRecommended):
		return "the nodeclaim is already marked"
	case conds.IsTrue(karpv1.ConditionTypeDisruptionReason):
		return "the nodeclaim is already being disrupted"
	}
	return ""
}

// poolReplaces reports whether the NodePool opted in to replacement on
// rebalance recommendations; a NodePool that is gone did not.
func (c *Handler) poolReplaces(ctx context.Context, name string) (bool, error) {
	if name == "" {
		return false, nil
	}
	nodePool := &karpv1.NodePool{}
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: name}, nodePool); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("getting nodepool %s: %w", name, err)
	}
	return nodePool.ReplacesOnSpotRebalance(), nil
}

// markOffering makes the NodeClaim's spot offering (instance type, zone)
// unavailable for the unavailable-offerings cache's TTL, with the message
// kind as the reason: a spot interruption warning or a rebalance
// recommendation for a pool that opted in.
func (c *Handler) markOffering(ctx context.Context, nodeClaim *karpv1.NodeClaim, kind Kind) {
	instanceType, zone := nodeClaim.Labels[corev1.LabelInstanceTypeStable], nodeClaim.Labels[corev1.LabelTopologyZone]
	if instanceType != "" && zone != "" && c.offerings != nil {
		c.offerings.MarkUnavailable(ctx, string(kind), instanceType, zone, karpv1.CapacityTypeSpot)
	}
}
