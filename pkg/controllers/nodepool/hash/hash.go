package hash

import (
	"strconv"

	"github.com/mitchellh/hashstructure/v2"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// Template returns the karpenter.sh/nodepool-hash of a NodePool template:
// the value upstream Karpenter computes for the same template at hash
// version karpv1.NodePoolHashVersion, so NodeClaims upstream stamped are not
// drifted by karp (see the package doc and testdata/).
//
// The hash is hashstructure's FormatV2 over the template struct with slices
// treated as sets, zero values ignored and nil pointers equal to zero
// values. It therefore depends on the Go field names, their order and the
// hash:"ignore" tags of karpv1.NodeClaimTemplate and the types it holds;
// the golden test pins it to upstream's values.
func Template(template *karpv1.NodeClaimTemplate) string {
	sum, err := hashstructure.Hash(template, hashstructure.FormatV2, &hashstructure.HashOptions{
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
