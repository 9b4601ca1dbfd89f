package interruption

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// launchSlack is added to twice the observed launch time: the disruption
// loop's poll and the replacement's scheduling.
const launchSlack = 10 * time.Second

// ReplaceByForNotice is when a NodeClaim whose instance is reclaimed at
// reclaimAt is deleted if its replacement is launched first: half way
// through the notice, so the drain keeps the other half. ok is false when
// that half does not hold twice the pool's launch time (launch) plus
// slack: the notice is too short, and the NodeClaim is deleted at once.
func ReplaceByForNotice(now, reclaimAt time.Time, launch time.Duration) (time.Time, bool) {
	half := reclaimAt.Sub(now) / 2
	if half < 2*launch+launchSlack {
		return time.Time{}, false
	}
	return now.Add(half), true
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
		if len(stored.Annotations) == len(nodeClaim.Annotations) && equalAnnotations(stored.Annotations, nodeClaim.Annotations) {
			return nil
		}
		return kubeClient.Patch(ctx, nodeClaim, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{}))
	})
	if err != nil {
		return false, client.IgnoreNotFound(fmt.Errorf("marking nodeclaim for replacement: %w", err))
	}
	return marked, nil
}

func equalAnnotations(a, b map[string]string) bool {
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
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
		nc := &list.Items[i]
		if !nc.StatusConditions().IsTrue(karpv1.ConditionTypeInitialized) {
			continue
		}
		init := nc.StatusConditions().Get(karpv1.ConditionTypeInitialized)
		longest = max(longest, init.LastTransitionTime.Sub(nc.CreationTimestamp.Time))
	}
	return longest, nil
}
