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
)
