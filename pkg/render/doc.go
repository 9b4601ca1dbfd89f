// Package render turns a solver decision (a simulation.NodeClaim) into
// the karpv1.NodeClaim karp creates. The provisioner creates it, the
// disruption controller launches replacements with it, and karp simulate
// prints it, so what simulate shows is exactly what the controller would
// create and a replacement looks exactly like provisioned capacity.
//
// Invariants:
//   - The same decision always renders the same object (requirements in
//     key order, instance types in the solver's price order).
//   - Only what the NodePool and the decision hold goes in; what belongs
//     to one pass (the provisioning batch annotation) is added by the
//     caller.
//
// The package is pure: it imports API types and pkg/simulation only, never
// a client.
package render
