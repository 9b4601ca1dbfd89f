package interruption

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/metrics"
)

// Event reasons every interruption handler publishes (upstream's AWS
// provider's names).
const (
	// ReasonSpotInterrupted: the instance received a spot interruption
	// notice.
	ReasonSpotInterrupted = "SpotInterrupted"
	// ReasonTerminatingOnInterruption: the NodeClaim was deleted because
	// of an interruption notice.
	ReasonTerminatingOnInterruption = "TerminatingOnInterruption"
)

// Terminate deletes a NodeClaim whose instance is being taken away. A
// non-zero reclaimAt becomes its termination deadline first (unless an
// earlier one is set), so the drain ends before the instance vanishes;
// that holds for a NodeClaim already deleting too. It
// reports whether this call deleted the NodeClaim: false when it was
// already deleting or is gone, so callers publish events and log once.
// The deletion is counted in karpenter_nodeclaims_disrupted_total under
// reason.
func Terminate(ctx context.Context, kubeClient client.Client, nodeClaim *karpv1.NodeClaim, reclaimAt time.Time, reason string) (bool, error) {
	// A NodeClaim already terminating (consolidated, expired) gets the
	// earlier deadline too: its drain must also end before the instance
	// goes.
	if !reclaimAt.IsZero() {
		if err := setDeadline(ctx, kubeClient, nodeClaim, reclaimAt); err != nil {
			return false, err
		}
	}
	if !nodeClaim.DeletionTimestamp.IsZero() {
		return false, nil
	}
	if err := kubeClient.Delete(ctx, nodeClaim, client.Preconditions{UID: &nodeClaim.UID}); err != nil {
		return false, client.IgnoreNotFound(fmt.Errorf("deleting interrupted nodeclaim: %w", err))
	}
	metrics.NodeClaimsDisruptedTotal.WithLabelValues(reason, nodeClaim.Labels[karpv1.NodePoolLabelKey],
		nodeClaim.Labels[karpv1.CapacityTypeLabelKey], "", metrics.TerminationModeForceful).Inc()
	return true, nil
}

// setDeadline makes reclaimAt the NodeClaim's termination deadline unless
// an earlier one is already set. A conflict (the termination controller
// writes the NodeClaim while it drains) is retried on a fresh read, at
// once: the deadline matters within the notice, not after a requeue.
func setDeadline(ctx context.Context, kubeClient client.Client, nodeClaim *karpv1.NodeClaim, reclaimAt time.Time) error {
	first := true
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if !first {
			if err := kubeClient.Get(ctx, client.ObjectKeyFromObject(nodeClaim), nodeClaim); err != nil {
				return err
			}
		}
		first = false
		if v, ok := nodeClaim.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ok {
			if existing, err := time.Parse(time.RFC3339, v); err == nil && !existing.After(reclaimAt) {
				return nil
			}
		}
		stored := nodeClaim.DeepCopy()
		if nodeClaim.Annotations == nil {
			nodeClaim.Annotations = map[string]string{}
		}
		nodeClaim.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey] = reclaimAt.UTC().Format(time.RFC3339)
		return kubeClient.Patch(ctx, nodeClaim, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{}))
	})
	if err != nil {
		return client.IgnoreNotFound(fmt.Errorf("setting termination deadline: %w", err))
	}
	return nil
}
