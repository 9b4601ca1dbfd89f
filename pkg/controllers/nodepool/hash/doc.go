// Package hash stamps each NodePool with the hash of its template
// (annotations karpenter.sh/nodepool-hash and karpenter.sh/nodepool-hash-version).
// The provisioner copies the NodePool's annotations onto the NodeClaims it
// creates; drift later compares a NodeClaim's copy with its pool's current
// hash.
//
// The hash (Template, pure) covers spec.template except the requirements,
// which drift judges separately: labels, annotations, taints, startup
// taints, nodeClassRef, expireAfter and terminationGracePeriod. It is
// deterministic, treats taint lists as sets (order and duplicates do not
// matter) and treats empty and missing values alike.
//
// When the hash algorithm version changes, NodeClaims carrying the old
// version are re-stamped with the pool's new hash instead of being
// reported drifted.
package hash
