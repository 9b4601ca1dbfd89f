// Package static keeps each static NodePool (spec.replicas set, feature
// gate StaticCapacity) at its replica count, as upstream Karpenter's
// static provisioning and deprovisioning controllers do.
//
// It gathers the NodePool's nodes from the cluster state, decides how
// many NodeClaims to create or which to delete (decide, pure), and acts:
// new NodeClaims are rendered from the NodePool's template like the
// provisioner's (simulation.StaticNodeClaims, render.NodeClaim: the
// cheapest instance type the template allows that holds the DaemonSets),
// and surplus ones are deleted, so karp's termination drains them. It
// also owns the NodePool's ReplicasServed condition while the gate is on.
//
// Invariants:
//   - Nodes that are leaving (deleted, or marked for deletion by a
//     disruption command whose replacement is already counted) do not
//     count toward the replicas; every node of the NodePool, leaving or
//     not, counts toward limits.nodes, so the NodePool never holds more
//     nodes than that limit.
//   - While the disruption controller is starting a command on one of the
//     NodePool's nodes (its replacement may not exist yet), nothing is
//     decided: the count would be off by one.
//   - It never launches for a NodePool that is not Ready or is being
//     deleted; it never consolidates (the disruption methods skip static
//     NodePools, except drift and expiry, which replace their nodes one
//     for one).
//
// It imports no other controller.
package static
