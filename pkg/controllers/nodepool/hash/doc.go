// Package hash stamps each NodePool with the hash of its template
// (annotations karpenter.sh/nodepool-hash and karpenter.sh/nodepool-hash-version).
// The provisioner copies the NodePool's annotations onto the NodeClaims it
// creates; drift later compares a NodeClaim's copy with its pool's current
// hash.
//
// The hash (Template, pure) is upstream Karpenter's, bit for bit, at the same
// hash version: hashstructure FormatV2 over spec.template with slices as
// sets, zero values ignored and nil pointers as zero values. It covers
// labels, annotations, taints, startup taints, nodeClassRef, expireAfter and
// terminationGracePeriod; the requirements are excluded (drift judges them
// separately). Taint order does not matter; an empty map differs from a
// missing one, as upstream. testdata/upstream-hashes.yaml holds hashes
// computed by upstream's own module (hack/upstreamhash) for the templates
// in testdata/templates.yaml, and the golden test compares them, so a
// cluster taken over from upstream Karpenter is not seen as drifted.
//
// When the hash algorithm version changes, NodeClaims carrying the old
// version are re-stamped with the pool's new hash instead of being
// reported drifted; a NodeClaim already marked Drifted only gets the new
// version and stays drifted.
package hash
