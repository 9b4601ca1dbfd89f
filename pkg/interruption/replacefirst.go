package interruption

import (
	"context"
	"fmt"
	"maps"
	"time"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// ReplaceByForNotice is when a NodeClaim whose instance is reclaimed at
// reclaimAt is deleted if its replacement is launched first: half way
// through the notice, so the drain keeps the other half. ok is false when
// that half does not hold twice the pool's launch time (launch) plus
// LaunchSlack (LaunchLead): the notice is too short, and the NodeClaim is
// deleted at once.
func ReplaceByForNotice(now, reclaimAt time.Time, launch time.Duration) (time.Time, bool) {
	half := reclaimAt.Sub(now) / 2
	if half < LaunchLead(launch, LaunchSlack, 0, NoLeadCeiling) {
		return time.Time{}, false
	}
	return now.Add(half), true
}

// ReplaceByForNodeClaim is ReplaceByForNotice for the NodeClaim, with its
// NodePool's ObservedLaunchTime: when the NodeClaim is deleted if its
// replacement is launched first, and whether there is time for that. ok
// is false, without a lookup, for a NodeClaim of no NodePool or not
// initialized: it runs no pods to protect and goes at once.
func ReplaceByForNodeClaim(ctx context.Context, kubeClient client.Reader, nodeClaim *karpv1.NodeClaim, now, reclaimAt time.Time) (time.Time, bool, error) {
	pool := nodeClaim.Labels[karpv1.NodePoolLabelKey]
	if pool == "" || !nodeClaim.StatusConditions().IsTrue(karpv1.ConditionTypeInitialized) {
		return time.Time{}, false, nil
	}
	launch, err := ObservedLaunchTime(ctx, kubeClient, pool)
	if err != nil {
		return time.Time{}, false, err
	}
	by, ok := ReplaceByForNotice(now, reclaimAt, launch)
	return by, ok, nil
}

// ReplaceFirst marks a NodeClaim whose instance is going to be replaced
// before it is deleted: reclaimAt (when non-zero) becomes its termination
// deadline as with Terminate, and replaceBy the time by which it is
// deleted, with the reason (the karpenter_nodeclaims_disrupted_total reason
// of that deletion) (karpv1.ReplaceByAnnotationKey). An earlier
// replace-by already set is kept. It reports whether this call marked the
// NodeClaim (false when it was marked already, is deleting or gone), so
// callers publish events and log once.
func ReplaceFirst(ctx context.Context, kubeClient client.Client, nodeClaim *karpv1.NodeClaim, reclaimAt, replaceBy time.Time, reason string) (bool, error) {
	if !nodeClaim.DeletionTimestamp.IsZero() {
		if reclaimAt.IsZero() {
			return false, nil
		}
		return false, setDeadline(ctx, kubeClient, nodeClaim, reclaimAt)
	}
	marked := false
	first := true
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if !first {
			if err := kubeClient.Get(ctx, client.ObjectKeyFromObject(nodeClaim), nodeClaim); err != nil {
				return err
			}
		}
		first = false
		stored := nodeClaim.DeepCopy()
		if nodeClaim.Annotations == nil {
			nodeClaim.Annotations = map[string]string{}
		}
		if !reclaimAt.IsZero() {
			v, ok := nodeClaim.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]
			if existing, err := time.Parse(time.RFC3339, v); !ok || err != nil || existing.After(reclaimAt) {
				nodeClaim.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey] = reclaimAt.UTC().Format(time.RFC3339)
			}
		}
		existing, _, ok := nodeClaim.ReplaceBy()
		marked = !ok
		if !ok || existing.After(replaceBy) {
			nodeClaim.Annotations[karpv1.ReplaceByAnnotationKey] = replaceBy.UTC().Format(time.RFC3339)
			nodeClaim.Annotations[karpv1.ReplaceReasonAnnotationKey] = reason
		}
		if maps.Equal(stored.Annotations, nodeClaim.Annotations) {
			return nil
		}
		return kubeClient.Patch(ctx, nodeClaim, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{}))
	})
	if err != nil {
		return false, client.IgnoreNotFound(fmt.Errorf("marking nodeclaim for replacement: %w", err))
	}
	return marked, nil
}

// ObservedLaunchTime is the longest time one of the NodePool's current
// NodeClaims took from creation to Initialized: what a replacement is
// expected to take. Zero when none is initialized.
func ObservedLaunchTime(ctx context.Context, kubeClient client.Reader, nodePool string) (time.Duration, error) {
	var list karpv1.NodeClaimList
	if err := kubeClient.List(ctx, &list, client.MatchingLabels{karpv1.NodePoolLabelKey: nodePool}); err != nil {
		return 0, fmt.Errorf("listing nodeclaims: %w", err)
	}
	var longest time.Duration
	for i := range list.Items {
		if launch, ok := LaunchTime(&list.Items[i]); ok {
			longest = max(longest, launch)
		}
	}
	return longest, nil
}
