package v1

import (
	"fmt"
	"strings"

	"github.com/mitchellh/hashstructure/v2"
)

// EC2NodeClassHashVersion is the version of Hash's algorithm and inputs.
// It changes whenever a change to the hashed fields or their defaults would
// change the hash of an unchanged class; the NodeClass hash controller then
// re-stamps existing NodeClaims instead of drifting them.
//
// It deliberately differs from upstream Karpenter's versions: karp hashes
// the typed kubelet settings where upstream hashes its open kubelet map, so
// the values differ, and a NodeClaim Karpenter launched must be re-stamped
// on migration rather than read as drifted.
const EC2NodeClassHashVersion = "karp-v1"

// Hash is the drift hash of the class's launch settings: every spec field
// except the selector terms (which drift through the resolved status), the
// IP prefix count and the literal amiFamily, plus the resolved AMI family,
// so that setting amiFamily to what the alias already implied is not drift.
// Slices are hashed as sets (tag and volume order do not matter) and zero
// values are ignored, so adding an unset optional field keeps every hash.
func (in *EC2NodeClass) Hash() string {
	hash, err := hashstructure.Hash([]interface{}{in.Spec, in.AMIFamily()}, hashstructure.FormatV2, &hashstructure.HashOptions{
		SlicesAsSets:    true,
		IgnoreZeroValue: true,
		ZeroNil:         true,
	})
	if err != nil {
		// Only unhashable kinds (channels, functions) fail; the spec has none.
		panic(fmt.Sprintf("hashing EC2NodeClass spec: %v", err))
	}
	return fmt.Sprint(hash)
}

// Alias is a parsed family@version AMI alias.
//
// +kubebuilder:object:generate=false
type Alias struct {
	// Family is the AMI family as spelled in amiFamily (e.g. AL2023).
	Family string
	// Version is the release version, or AliasVersionLatest.
	Version string
}

// AliasVersionLatest is the alias version that follows new AMI releases.
const AliasVersionLatest = "latest"

func (a Alias) String() string { return strings.ToLower(a.Family) + "@" + a.Version }

// aliasFamilies maps an alias's family prefix to the amiFamily value.
var aliasFamilies = map[string]string{
	"al2":          AMIFamilyAL2,
	"al2023":       AMIFamilyAL2023,
	"bottlerocket": AMIFamilyBottlerocket,
	"windows2019":  AMIFamilyWindows2019,
	"windows2022":  AMIFamilyWindows2022,
	"windows2025":  AMIFamilyWindows2025,
}

// ParseAlias parses family@version. The API server has validated stored
// objects; the error is for aliases built elsewhere.
func ParseAlias(alias string) (Alias, error) {
	family, version, ok := strings.Cut(alias, "@")
	if !ok || family == "" || version == "" {
		return Alias{}, fmt.Errorf("alias %q is not of the form family@version", alias)
	}
	name, ok := aliasFamilies[family]
	if !ok {
		return Alias{}, fmt.Errorf("alias %q has unsupported family %q", alias, family)
	}
	return Alias{Family: name, Version: version}, nil
}

// Alias returns the class's alias term, or nil when it selects AMIs
// otherwise (or the alias does not parse).
func (in *EC2NodeClass) Alias() *Alias {
	for _, term := range in.Spec.AMISelectorTerms {
		if term.Alias == "" {
			continue
		}
		alias, err := ParseAlias(term.Alias)
		if err != nil {
			return nil
		}
		return &alias
	}
	return nil
}

// AMIFamily is the family the class's user data and default volumes
// follow: spec.amiFamily when set, else the alias' family. Validation
// requires one of them; Custom is returned if neither is there.
func (in *EC2NodeClass) AMIFamily() string {
	if in.Spec.AMIFamily != nil {
		return *in.Spec.AMIFamily
	}
	if alias := in.Alias(); alias != nil {
		return alias.Family
	}
	return AMIFamilyCustom
}
