// Package garbagecollection reconciles the cloud provider's instances with
// the cluster's NodeClaims, both ways, on a timer:
//
//   - a Registered NodeClaim whose instance is gone from List() and whose
//     Node is not Ready (or gone) is deleted, so its pods are rescheduled
//     and the provisioner replaces the capacity;
//   - an instance from List() that no NodeClaim names, and that is older
//     than LeakedInstanceAge, is deleted with its Node: a launch whose
//     NodeClaim vanished (deleted mid-launch, or a crash between Create and
//     recording the providerID) must not cost money forever.
//
// Instances are matched to NodeClaims, and to Nodes, by instance: the
// provider's instance ID when it offers one (InstanceID), since one
// instance may be spelled by providerIDs that differ (AWS's with and
// without the zone). An instance a NodeClaim names, directly or through a
// Node it owns or names, is never collected.
//
// NodeClaims are read straight from the API server (not the cache) for
// the leak check: a stale cache must never make a live instance look
// leaked. The age threshold covers the window between Create returning and
// the providerID being written.
package garbagecollection
