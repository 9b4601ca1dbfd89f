// Package expiration drains the nodes of capacity blocks before the
// blocks end, as upstream Karpenter's AWS provider's
// capacityreservation.expiration controller does.
//
// EC2 starts terminating a capacity block's instances 30 minutes before
// the block ends. From 40 minutes before the end (the block is
// "expiring", capacityreservation.ExpiringWindow) the controller deletes
// every NodeClaim in the block, so the core's termination cordons and
// drains its node while the provisioner launches elsewhere for its pods;
// the reserved offering is already unavailable by then. As with every
// interruption karp acts on (pkg/interruption.Terminate), the moment EC2
// starts reclaiming becomes the NodeClaim's termination deadline, so the
// drain ends before the instance goes even when a PodDisruptionBudget
// holds it. Each deletion publishes CapacityBlockExpiring on the NodeClaim
// and its Node and counts in karpenter_nodeclaims_disrupted_total with
// reason capacity_block_expiration.
//
// The controller looks every minute, and sooner when a block turns
// expiring within the minute. It reads the reservations by the IDs on the
// NodeClaims' karpenter.k8s.aws/capacity-reservation-id labels; other
// reservations (on-demand capacity reservations, interruptible ones) never
// expire this way.
package expiration
