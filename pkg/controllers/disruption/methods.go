package disruption

// NewMethods lists the disruption methods in the order the controller
// tries them; the first to return a command wins the pass.
func NewMethods(c *Controller) []Method {
	return []Method{
		// Deletes every empty node whose consolidateAfter elapsed, within
		// budgets, in one command.
		&Emptiness{c: c},
		// Replaces drifted nodes one at a time, at any price.
		&Drift{c: c},
		// Replaces nodes a DaemonSet pod cannot fit for lack of resources
		// with capacity sized for their pods plus every DaemonSet, at any
		// price, within the Drifted budgets.
		&DaemonSetFit{c: c},
		// Deletes or replaces several nodes at once with cheaper capacity
		// (bounded prefix search).
		&MultiNodeConsolidation{consolidation{c}},
		// Deletes or replaces one node with cheaper capacity, possibly by
		// several smaller nodes.
		&SingleNodeConsolidation{consolidation: consolidation{c}},
	}
}
