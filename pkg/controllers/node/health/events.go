package health

// Event reasons.
const (
	// ReasonNodeRepairBlocked: too many of the pool's nodes are unhealthy
	// to repair one more.
	ReasonNodeRepairBlocked = "NodeRepairBlocked"
	// ReasonNodeRepair: the node is being replaced for being unhealthy.
	ReasonNodeRepair = "NodeRepair"
)
