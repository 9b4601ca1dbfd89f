// Package termination finalizes deleting NodeClaims: it deletes the
// NodeClaim's Node, lets the Node go, terminates the instance and only then
// removes the NodeClaim's karpenter.sh/termination finalizer. It also
// deletes the NodeClaim when its Node is deleted out from under it, so
// deleting a karp Node with kubectl terminates the instance too.
//
// The steps are an ordered list (controller.go, NewController); graceful
// draining (evictions respecting PodDisruptionBudgets) slots in as a step
// before the Node's finalizer is removed. Until then the Node is deleted
// without draining and its pods are left to the Kubernetes pod garbage
// collector.
//
// Crash safety: every step is idempotent and re-derived from the world on
// each reconcile (Nodes found by providerID, the instance asked for with
// Get after Delete), so a restart anywhere resumes without leaking.
package termination
