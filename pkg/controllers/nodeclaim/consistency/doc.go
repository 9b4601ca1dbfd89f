// Package consistency checks, every ten minutes, that a launched
// NodeClaim's Node agrees with it, as upstream Karpenter's nodeclaim
// consistency controller does:
//
//   - node shape: an initialized NodeClaim's Node reports at least 90% of
//     the capacity the NodeClaim expected for each resource its pods
//     requested (a Node that came up with much less memory or fewer GPUs
//     than the instance type promised is reported, not repaired);
//   - termination: a deleting NodeClaim whose Node holds a pod that a
//     PodDisruptionBudget allowing no disruption covers is reported as
//     stuck on that budget.
//
// A NodeClaim is first checked once it is initialized (or deleting):
// before that there is nothing to check, and upstream's write of
// ConsistentStateFound=True at registration would compete with the
// lifecycle's status writes while a large scale-up registers.
//
// The issues of a check are a FailedConsistencyCheck warning event on the
// NodeClaim (several issues share one event, separated by "; ") and an
// error log line each; the NodeClaim's ConsistentStateFound condition
// is False (reason ConsistencyCheckFailed) while there are issues and True
// otherwise. The controller changes nothing else: it neither deletes nor
// repairs. The checks themselves (checks.go) are pure functions of the
// NodeClaim, its Node, the Node's pods and the PodDisruptionBudgets.
package consistency
