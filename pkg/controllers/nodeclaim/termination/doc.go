// Package termination finalizes deleting NodeClaims: it stamps the
// termination deadline (karpenter.sh/nodeclaim-termination-timestamp, when
// the NodeClaim has a terminationGracePeriod), deletes the NodeClaim's Node
// and waits until it is gone, terminates the instance and only then
// removes the NodeClaim's karpenter.sh/termination finalizer. It also
// deletes the NodeClaim when its Node is deleted out from under it, so
// deleting a karp Node with kubectl terminates the instance too.
//
// The steps are an ordered list (controller.go, NewController). The Node's
// own finalizer is released by pkg/controllers/node/termination once it
// drained the node (evictions respecting PodDisruptionBudgets), its volumes
// detached and its instance is gone.
//
// Crash safety: every step is idempotent and re-derived from the world on
// each reconcile (Nodes found by providerID, the instance asked for with
// Get after Delete), so a restart anywhere resumes without leaking.
package termination
