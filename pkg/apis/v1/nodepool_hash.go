package v1

import (
	"strconv"

	"github.com/mitchellh/hashstructure/v2"
)

// Hash returns the karpenter.sh/nodepool-hash of the NodePool's template:
// the value upstream Karpenter computes for the same template at hash
// version NodePoolHashVersion, so NodeClaims upstream stamped are not
// drifted by karp (testdata/upstream-hashes.yaml, written by
// hack/upstreamhash with upstream's own NodePool.Hash(), pins it).
//
// The hash is hashstructure's FormatV2 over spec.template with slices
// treated as sets, zero values ignored and nil pointers equal to zero
// values. It covers labels, annotations, taints, startup taints,
// nodeClassRef, expireAfter and terminationGracePeriod; the requirements
// are excluded (drift judges them separately). Taint order does not
// matter; an empty map differs from a missing one, as upstream. It
// depends on the Go field names, their order and the hash:"ignore" tags
// of NodeClaimTemplate and the types it holds.
//
// The provisioner stamps it on every NodeClaim it creates and drift
// compares a NodeClaim's stamp with it, both computing it from the
// template they hold: the NodePool's annotation, which the hash
// controller writes for users and dashboards, lags a template change,
// and a NodeClaim stamped from it in that window would be born drifted.
func (in *NodePool) Hash() string {
	sum, err := hashstructure.Hash(in.Spec.Template, hashstructure.FormatV2, &hashstructure.HashOptions{
		SlicesAsSets:    true,
		IgnoreZeroValue: true,
		ZeroNil:         true,
	})
	if err != nil {
		// Only a field kind hashstructure cannot walk (a func or a channel)
		// errors; the template holds strings, maps, slices, pointers and
		// integers.
		panic("hashing nodepool template: " + err.Error())
	}
	return strconv.FormatUint(sum, 10)
}
