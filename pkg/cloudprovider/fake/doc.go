// Package fake is an in-memory CloudProvider for controller tests. It
// launches nothing: Create records a NodeClaim as an "instance" with a
// deterministic providerID (fake://<nodeclaim name>), Get/List/Delete work on
// that record, and tests steer it by configuring instance types per
// NodePool, injecting the next error of a call, refusing chosen offerings
// with insufficient capacity, capping the number of creates and marking
// instances drifted.
//
// Create picks the cheapest available offering of the compatible instance
// types (the same ranking every provider uses, cloudprovider.LaunchCandidates);
// offerings marked insufficient are skipped, as a fleet request would, and
// when nothing else is left Create returns an InsufficientCapacityError
// listing the refused offerings.
//
// It must not import any controller package; it is safe for concurrent use.
package fake
