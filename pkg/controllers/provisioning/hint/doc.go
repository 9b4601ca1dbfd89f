// Package hint writes karp's scheduler hints. karp plans which node each
// pending pod lands on; the kube-scheduler, left alone, places pods by its own scoring on whichever
// new node turns Ready first, mixing large and small pods differently
// from the plan, so some pods no longer fit anywhere and need another
// round of nodes. Writing the plan into the pod's status.nominatedNodeName
// (the field external components may set since Kubernetes 1.35,
// NominatedNodeNameForExpectation) makes the scheduler try that node first
// and count the pod against that node's capacity while it places others.
// A hint is only a hint: the scheduler still runs every filter, and a
// stale hint (a node that never came) costs it nothing. The hint carries
// a pod condition (state.SchedulerHintCondition) so karp never mistakes
// its own hint for the scheduler's preemption nomination.
//
// Who writes a hint: the provisioner, for pods it placed on nodes that
// exist (Write); the Controller, for the pods nominated to a NodeClaim
// once its node registers (a new node's name is not known before); the
// batch hold, before it lifts a batch (WriteConfirmed). FillPods says
// which pods of new NodeClaims need no hint at all.
//
// Invariants:
//   - A hint never overwrites a nomination the scheduler made itself
//     (preemption) and is never written on a bound pod.
//   - A hint karp wrote that the cache does not show yet is not written
//     again (the ledger, hintLedger).
//
// The package is part of provisioning and imports the cluster state; it
// must not import pkg/controllers/provisioning (which imports it).
package hint
