package scheduling

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// OpGte and OpLte are the inclusive numeric operators karpenter.sh/v1 adds to
// the Kubernetes node selector operators (same strings as karpv1.NodeSelectorOpGte/Lte).
const (
	OpGte corev1.NodeSelectorOperator = "Gte"
	OpLte corev1.NodeSelectorOperator = "Lte"
)

// Requirement is the set of values a label key may take.
//
// The set is either a finite list of values (complement=false) or every value
// except a finite list (complement=true), further restricted by optional
// inclusive integer bounds. When bounds are set, only values that parse as
// integers belong to the set. Separately, absent says whether a node without
// the label satisfies it (true for NotIn and DoesNotExist, as in Kubernetes).
// A set with no value that does not accept absence is unsatisfiable.
type Requirement struct {
	Key        string
	complement bool
	absent     bool
	values     []string // sorted, unique
	gte, lte   *int64   // inclusive bounds; nil means unbounded
	// MinValues is the minimum number of distinct values of Key the instance
	// types of a NodeClaim must span (karpenter.sh minValues); nil means none.
	MinValues *int
}

// NewRequirement builds the requirement for one node selector expression.
// Gt/Lt/Gte/Lte take exactly one integer value; an unparsable value yields
// the empty set (nothing can satisfy it), as kube-scheduler does.
func NewRequirement(key string, op corev1.NodeSelectorOperator, values ...string) *Requirement {
	r := &Requirement{Key: key}
	switch op {
	case corev1.NodeSelectorOpIn:
		r.values = sortedUnique(values)
	case corev1.NodeSelectorOpNotIn:
		r.complement = true
		r.absent = true
		r.values = sortedUnique(values)
	case corev1.NodeSelectorOpExists:
		r.complement = true
	case corev1.NodeSelectorOpDoesNotExist:
		r.absent = true
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, OpGte, OpLte:
		if len(values) != 1 {
			return r
		}
		n, err := strconv.ParseInt(values[0], 10, 64)
		if err != nil {
			return r
		}
		r.complement = true
		switch op {
		case corev1.NodeSelectorOpGt:
			if n == math.MaxInt64 {
				return &Requirement{Key: key}
			}
			n++
			r.gte = &n
		case OpGte:
			r.gte = &n
		case corev1.NodeSelectorOpLt:
			if n == math.MinInt64 {
				return &Requirement{Key: key}
			}
			n--
			r.lte = &n
		case OpLte:
			r.lte = &n
		}
	default:
		// Unknown operators select nothing.
	}
	return r
}

func sortedUnique(values []string) []string {
	out := slices.Clone(values)
	slices.Sort(out)
	return slices.Compact(out)
}

// Has reports whether value belongs to the set.
func (r *Requirement) Has(value string) bool {
	if !r.withinBounds(value) {
		return false
	}
	_, found := slices.BinarySearch(r.values, value)
	return found != r.complement
}

func (r *Requirement) withinBounds(value string) bool {
	if r.gte == nil && r.lte == nil {
		return true
	}
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return false
	}
	return (r.gte == nil || n >= *r.gte) && (r.lte == nil || n <= *r.lte)
}

// hasValues reports whether some label value belongs to the set.
func (r *Requirement) hasValues() bool {
	if !r.complement {
		return len(r.values) > 0
	}
	return r.gte == nil || r.lte == nil || *r.gte <= *r.lte
}

// IsEmpty reports whether nothing satisfies the requirement: no value is in
// the set and a missing label is not accepted either.
func (r *Requirement) IsEmpty() bool { return !r.absent && !r.hasValues() }

// IsDoesNotExist reports whether only a missing label satisfies it.
func (r *Requirement) IsDoesNotExist() bool { return r.absent && !r.hasValues() }

// AcceptsAbsent reports whether a node without the label satisfies it
// (NotIn and DoesNotExist).
func (r *Requirement) AcceptsAbsent() bool { return r.absent }

// IsComplement reports whether the set is "every value except ...".
func (r *Requirement) IsComplement() bool { return r.complement }

// Values returns the finite values of an In-style set (nil for complements).
func (r *Requirement) Values() []string {
	if r.complement {
		return nil
	}
	return r.values
}

// Len is the number of values in the set (math.MaxInt for complements).
func (r *Requirement) Len() int {
	if r.complement {
		if !r.hasValues() {
			return 0
		}
		return math.MaxInt
	}
	return len(r.values)
}

// Any returns one value of the set, preferring the smallest; "" when the set
// is empty or has no representable value.
func (r *Requirement) Any() string {
	if !r.complement {
		if len(r.values) == 0 {
			return ""
		}
		return r.values[0]
	}
	if !r.hasValues() {
		return ""
	}
	start := int64(0)
	if r.gte != nil {
		start = *r.gte
	}
	for n := start; r.lte == nil || n <= *r.lte; n++ {
		if v := strconv.FormatInt(n, 10); r.Has(v) {
			return v
		}
	}
	return ""
}

// Intersection returns the set of values in both r and other. The key and
// the larger MinValues are kept from r and other.
func (r *Requirement) Intersection(other *Requirement) *Requirement {
	out := &Requirement{Key: r.Key, MinValues: maxMinValues(r.MinValues, other.MinValues), absent: r.absent && other.absent}
	out.gte = maxBound(r.gte, other.gte)
	out.lte = minBound(r.lte, other.lte)
	switch {
	case !r.complement && !other.complement:
		out.values = intersectSorted(r.values, other.values)
	case r.complement && other.complement:
		out.complement = true
		out.values = unionSorted(r.values, other.values)
	case r.complement:
		out.values = subtractSorted(other.values, r.values)
	default:
		out.values = subtractSorted(r.values, other.values)
	}
	if !out.complement {
		// A finite set has no use for bounds: keep only the values inside them.
		if out.gte != nil || out.lte != nil {
			kept := out.values[:0:0]
			for _, v := range out.values {
				if out.withinBounds(v) {
					kept = append(kept, v)
				}
			}
			out.values = kept
		}
		out.gte, out.lte = nil, nil
	} else if !out.hasValues() {
		return &Requirement{Key: r.Key, MinValues: out.MinValues, absent: out.absent}
	}
	return out
}

// Intersects reports whether some node label state (a value, or the label
// being absent) satisfies both, without allocating in the finite cases.
func (r *Requirement) Intersects(other *Requirement) bool {
	if r.absent && other.absent {
		return true
	}
	switch {
	case !r.complement && !other.complement:
		return sortedShare(r.values, other.values, r, other)
	case !r.complement:
		for _, v := range r.values {
			if other.Has(v) {
				return true
			}
		}
		return false
	case !other.complement:
		for _, v := range other.values {
			if r.Has(v) {
				return true
			}
		}
		return false
	}
	return r.Intersection(other).hasValues()
}

func sortedShare(a, b []string, ra, rb *Requirement) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch strings.Compare(a[i], b[j]) {
		case 0:
			if ra.withinBounds(a[i]) && rb.withinBounds(a[i]) {
				return true
			}
			i++
			j++
		case -1:
			i++
		default:
			j++
		}
	}
	return false
}

// Operator is the node selector operator that best describes the set
// (In, NotIn, Exists, DoesNotExist, Gte, Lte); sets that need several
// expressions report the first of NodeSelectorRequirements.
func (r *Requirement) Operator() corev1.NodeSelectorOperator {
	return r.NodeSelectorRequirements()[0].Operator
}

// NodeSelectorRequirements expresses the set as ANDed node selector
// requirements (one for simple sets).
func (r *Requirement) NodeSelectorRequirements() []corev1.NodeSelectorRequirement {
	if r.IsDoesNotExist() {
		return []corev1.NodeSelectorRequirement{{Key: r.Key, Operator: corev1.NodeSelectorOpDoesNotExist}}
	}
	if !r.complement {
		return []corev1.NodeSelectorRequirement{{Key: r.Key, Operator: corev1.NodeSelectorOpIn, Values: slices.Clone(r.values)}}
	}
	var out []corev1.NodeSelectorRequirement
	if r.gte != nil {
		out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: OpGte, Values: []string{strconv.FormatInt(*r.gte, 10)}})
	}
	if r.lte != nil {
		out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: OpLte, Values: []string{strconv.FormatInt(*r.lte, 10)}})
	}
	if !r.absent && r.gte == nil && r.lte == nil {
		out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOpExists})
	}
	if len(r.values) > 0 {
		out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOpNotIn, Values: slices.Clone(r.values)})
	}
	if len(out) == 0 { // NotIn with no values: every value, or no label at all
		out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOpNotIn})
	}
	return out
}

// appendKey appends the requirement's part of Requirements.AppendKey:
// the key, a flags byte, the bounds and MinValues present, the values,
// each field ended by a zero byte.
func (r *Requirement) appendKey(b []byte) []byte {
	b = append(b, r.Key...)
	flags := byte(0x20)
	if r.complement {
		flags |= 1
	}
	if r.absent {
		flags |= 2
	}
	b = append(b, 0, flags)
	for _, n := range [...]*int64{r.gte, r.lte} {
		if n == nil {
			b = append(b, '-')
		} else {
			b = strconv.AppendInt(b, *n, 10)
		}
		b = append(b, 0)
	}
	if r.MinValues != nil {
		b = strconv.AppendInt(b, int64(*r.MinValues), 10)
	}
	b = append(b, 0)
	for _, v := range r.values {
		b = append(b, v...)
		b = append(b, 0)
	}
	return append(b, 1)
}

// String renders the set the way reasons print it, e.g. "zone In [a b]",
// "cpu Gte 4", "team NotIn [x]", "gpu DoesNotExist".
func (r *Requirement) String() string {
	parts := make([]string, 0, 3)
	for _, nsr := range r.NodeSelectorRequirements() {
		switch nsr.Operator {
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			parts = append(parts, fmt.Sprintf("%s %s", nsr.Key, nsr.Operator))
		case OpGte, OpLte:
			parts = append(parts, fmt.Sprintf("%s %s %s", nsr.Key, nsr.Operator, nsr.Values[0]))
		default:
			parts = append(parts, fmt.Sprintf("%s %s [%s]", nsr.Key, nsr.Operator, strings.Join(nsr.Values, " ")))
		}
	}
	return strings.Join(parts, ", ")
}

func maxMinValues(a, b *int) *int {
	switch {
	case a == nil:
		return b
	case b == nil || *a >= *b:
		return a
	}
	return b
}

func maxBound(a, b *int64) *int64 {
	switch {
	case a == nil:
		return b
	case b == nil || *a >= *b:
		return a
	}
	return b
}

func minBound(a, b *int64) *int64 {
	switch {
	case a == nil:
		return b
	case b == nil || *a <= *b:
		return a
	}
	return b
}

func intersectSorted(a, b []string) []string {
	var out []string
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch strings.Compare(a[i], b[j]) {
		case 0:
			out = append(out, a[i])
			i++
			j++
		case -1:
			i++
		default:
			j++
		}
	}
	return out
}

func unionSorted(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j >= len(b) || (i < len(a) && a[i] < b[j]):
			out = append(out, a[i])
			i++
		case i >= len(a) || b[j] < a[i]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

// subtractSorted returns a \ b.
func subtractSorted(a, b []string) []string {
	var out []string
	j := 0
	for _, v := range a {
		for j < len(b) && b[j] < v {
			j++
		}
		if j < len(b) && b[j] == v {
			continue
		}
		out = append(out, v)
	}
	return out
}
