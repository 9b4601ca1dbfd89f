package termination

// Event reasons, as upstream names them.
const (
	// ReasonEvicted: a pod was evicted from a draining node (on the pod).
	ReasonEvicted = "Evicted"
	// ReasonFailedDraining: an eviction was refused, usually by a
	// PodDisruptionBudget, and will be retried (on the pod), or pods block
	// the drain (on the node).
	ReasonFailedDraining = "FailedDraining"
	// ReasonDisrupted: a pod was deleted because the node's
	// terminationGracePeriod ran out (on the pod).
	ReasonDisrupted = "Disrupted"
	// ReasonAwaitingVolumeDetachment: the drained node still has volume
	// attachments (on the node).
	ReasonAwaitingVolumeDetachment = "AwaitingVolumeDetachment"
	// ReasonInvalidDoNotDisruptAnnotation: a pod queued for eviction has a
	// karpenter.sh/do-not-disrupt annotation that protects nothing (on the
	// pod). The disruption controller gives the same warning when it weighs
	// the pod's node; a pod that lands on a node already chosen, or a drain
	// karp did not choose (a deleted NodeClaim, expiry, interruption), is
	// told here.
	ReasonInvalidDoNotDisruptAnnotation = "InvalidDoNotDisruptAnnotation"
)
