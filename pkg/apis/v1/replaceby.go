package v1

import "time"

// Replacement ahead of a forceful disruption (karp's own; upstream deletes
// an interrupted or unhealthy node at once and provisions for its pods
// afterwards). The handler that learns the node must go (an interruption
// notice, a repair) annotates its NodeClaim with the deadline instead of
// deleting it when the notice leaves time to launch a replacement; the
// disruption controller then launches the replacement and deletes the
// NodeClaim once it is initialized, and the nodeclaim expiration
// controller deletes it at the deadline whatever is in flight.
const (
	// ReplaceByAnnotationKey on a NodeClaim is the RFC3339 time by which
	// it is deleted.
	ReplaceByAnnotationKey = "karp.sh/replace-by"
	// ReplaceReasonAnnotationKey is why: the karpenter_nodeclaims_disrupted_total
	// reason of the deletion ("interrupted", "unhealthy").
	ReplaceReasonAnnotationKey = "karp.sh/replace-reason"
)

// ReplaceBy returns the NodeClaim's replace-by deadline and reason, and
// whether it has a valid one.
func (in *NodeClaim) ReplaceBy() (time.Time, string, bool) {
	if in == nil {
		return time.Time{}, "", false
	}
	raw, ok := in.Annotations[ReplaceByAnnotationKey]
	if !ok {
		return time.Time{}, "", false
	}
	at, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		return time.Time{}, "", false
	}
	return at, in.Annotations[ReplaceReasonAnnotationKey], true
}
