// Package provisioning turns pending pods into NodeClaims.
//
// Gather → Decide → Act:
//   - The pod and node triggers (trigger.go) feed a Batcher: the first
//     provisionable pod (or deleting node) opens a window that closes after
//     an idle period or a maximum duration.
//   - The Provisioner (a singleton loop) waits for the window, checks that
//     the cluster state is synced, and gathers the provisionable pods, the
//     nodes (existing, in flight, being deleted), Ready NodePools with their
//     instance types (limits count the nodes they already hold), DaemonSets, LimitRanges,
//     namespaces and volume topology.
//   - simulation.Solve decides; the Provisioner creates the NodeClaims,
//     records them in state, nominates the pods (in memory, with an expiry)
//     and publishes Nominated and FailedScheduling events.
//   - With CapacityBuffers (WithBuffers, buffers.go), the buffers' virtual
//     pods join the solve after the real pods; NodeClaims are created for
//     them like any other, but they are never nominated, hinted or given
//     events, and where they went is recorded for the buffers' status.
//
// Two concerns of provisioning are packages of their own: the scheduler
// hints (package hint) and the hold of a multi-node batch from the
// scheduler until the batch is up (package batchhold). This package
// imports them; they never import it.
//
// Invariants:
//   - Nothing is created while state is not synced, so after a restart the
//     in-flight NodeClaims are capacity before the first solve and the
//     same pods are not provisioned twice.
//   - A nominated pod is neither provisionable nor counted twice: it counts
//     against the node it is nominated to until it binds or the nomination
//     expires.
//   - NodeClaims are created with generateName; a crash between solving and
//     creating only means the next pass solves again.
//
// The package never calls the cloud provider's Create: launching belongs
// to the NodeClaim lifecycle controller.
package provisioning
