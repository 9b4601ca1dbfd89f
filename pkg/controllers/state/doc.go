// Package state holds the informer controllers that feed pkg/state's
// in-memory Cluster: one reconciler per kind (Node, NodeClaim, Pod,
// DaemonSet, NodePool, PodDisruptionBudget) that reads the object from the
// manager's cache and records it, or forgets it once it is gone.
//
// They reconcile from the cached object, never from the event type, so a
// missed or coalesced event heals on the next one. They decide nothing.
package state
