package scheduling

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Requirements is a conjunction of Requirement keyed by label key. A key
// that is absent places no constraint.
type Requirements map[string]*Requirement

// normalizedLabels maps deprecated label keys to the stable keys karp
// reasons about, as kube-scheduler users still write the beta ones.
var normalizedLabels = map[string]string{
	"failure-domain.beta.kubernetes.io/zone":   corev1.LabelTopologyZone,
	"failure-domain.beta.kubernetes.io/region": corev1.LabelTopologyRegion,
	"beta.kubernetes.io/arch":                  corev1.LabelArchStable,
	"beta.kubernetes.io/os":                    corev1.LabelOSStable,
	"beta.kubernetes.io/instance-type":         corev1.LabelInstanceTypeStable,
}

// NormalizeKey returns the stable label key for a deprecated one.
func NormalizeKey(key string) string {
	if n, ok := normalizedLabels[key]; ok {
		return n
	}
	return key
}

// NewRequirements builds a conjunction; repeated keys are intersected.
func NewRequirements(reqs ...*Requirement) Requirements {
	out := Requirements{}
	out.Add(reqs...)
	return out
}

// NewLabelRequirements requires each label to have exactly its value.
func NewLabelRequirements(labels map[string]string) Requirements {
	out := make(Requirements, len(labels))
	for k, v := range labels {
		out.Add(NewRequirement(NormalizeKey(k), corev1.NodeSelectorOpIn, v))
	}
	return out
}

// NewNodeSelectorRequirements converts ANDed node selector expressions.
func NewNodeSelectorRequirements(nsrs ...corev1.NodeSelectorRequirement) Requirements {
	out := make(Requirements, len(nsrs))
	for _, nsr := range nsrs {
		out.Add(NewRequirement(NormalizeKey(nsr.Key), nsr.Operator, nsr.Values...))
	}
	return out
}

// Add intersects each requirement into r, in place.
func (r Requirements) Add(reqs ...*Requirement) {
	for _, req := range reqs {
		if existing, ok := r[req.Key]; ok {
			req = existing.Intersection(req)
		}
		r[req.Key] = req
	}
}

// Copy returns a shallow copy (Requirement values are immutable once built).
func (r Requirements) Copy() Requirements {
	out := make(Requirements, len(r))
	for k, v := range r {
		out[k] = v
	}
	return out
}

// Intersection returns a new conjunction of r and other.
func (r Requirements) Intersection(other Requirements) Requirements {
	out := r.Copy()
	for _, k := range other.Keys() {
		out.Add(other[k])
	}
	return out
}

// Get returns the requirement for key, or nil when unconstrained.
func (r Requirements) Get(key string) *Requirement { return r[key] }

// Keys returns the keys in sorted order.
func (r Requirements) Keys() []string {
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// IsSatisfiable reports whether no requirement is empty.
func (r Requirements) IsSatisfiable() bool {
	for _, req := range r {
		if req.IsEmpty() {
			return false
		}
	}
	return true
}

// Compatible reports whether a pod (or DaemonSet pod) requiring podReqs can
// land on a node described by r, the node side. Keys r constrains must
// intersect. Keys r leaves open are fine for well-known labels (the instance
// type defines them later) and for requirements a missing label satisfies
// (NotIn, DoesNotExist); any other key would need a label the node will not
// have.
func (r Requirements) Compatible(podReqs Requirements, wellKnown sets.Set[string]) error {
	for _, key := range podReqs.Keys() {
		if err := r.compatibleKey(podReqs[key], wellKnown); err != nil {
			return err
		}
	}
	return nil
}

func (r Requirements) compatibleKey(pod *Requirement, wellKnown sets.Set[string]) error {
	node, ok := r[pod.Key]
	if !ok {
		if pod.AcceptsAbsent() || wellKnown.Has(pod.Key) {
			return nil
		}
		return fmt.Errorf("label %s is not defined by the NodePool (requires %s)", pod.Key, pod)
	}
	if !node.Intersects(pod) {
		return fmt.Errorf("requires %s, NodePool allows %s", pod, node)
	}
	return nil
}

// StrictlyCompatible is Compatible without the well-known allowance: used
// for nodes that already exist, whose labels are final.
func (r Requirements) StrictlyCompatible(podReqs Requirements) error {
	for _, key := range podReqs.Keys() {
		pod := podReqs[key]
		node, ok := r[key]
		if !ok {
			if pod.AcceptsAbsent() {
				continue
			}
			return fmt.Errorf("node has no label %s (requires %s)", key, pod)
		}
		if !node.Intersects(pod) {
			return fmt.Errorf("requires %s, node has %s", pod, node)
		}
	}
	return nil
}

// Intersects reports whether every key both constrain shares a value.
func (r Requirements) Intersects(other Requirements) error {
	small, large := r, other
	if len(large) < len(small) {
		small, large = large, small
	}
	for key, a := range small {
		if b, ok := large[key]; ok && !a.Intersects(b) {
			x, y := r[key], other[key]
			return fmt.Errorf("%s does not intersect %s", x, y)
		}
	}
	return nil
}

// Labels returns the labels a node satisfying r certainly carries: the keys
// with exactly one allowed value.
func (r Requirements) Labels() map[string]string {
	out := map[string]string{}
	for k, req := range r {
		if vals := req.Values(); len(vals) == 1 {
			out[k] = vals[0]
		}
	}
	return out
}

// NodeSelectorRequirements renders r in key order.
func (r Requirements) NodeSelectorRequirements() []corev1.NodeSelectorRequirement {
	var out []corev1.NodeSelectorRequirement
	for _, k := range r.Keys() {
		out = append(out, r[k].NodeSelectorRequirements()...)
	}
	return out
}

// AppendKey appends an encoding of r to b that is equal for two
// conjunctions exactly when they hold the same keys with the same values,
// bounds, absence and MinValues: an interning key that costs no
// formatting, unlike String.
func (r Requirements) AppendKey(b []byte) []byte {
	var small [16]string
	keys := small[:0]
	for k := range r {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b = r[k].appendKey(b)
	}
	return b
}

// AppendIntersectionKey appends r.Intersection(other).AppendKey(nil) to b
// without building the intersection: only keys both constrain are
// intersected.
func (r Requirements) AppendIntersectionKey(b []byte, other Requirements) []byte {
	var small [24]string
	keys := small[:0]
	for k := range r {
		keys = append(keys, k)
	}
	for k := range other {
		if _, ok := r[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		req, ok := r[k]
		switch o, both := other[k]; {
		case !ok:
			req = o
		case both:
			req = req.Intersection(o)
		}
		b = req.appendKey(b)
	}
	return b
}

// String renders r canonically (sorted keys); equal sets render equally, so
// the string doubles as an interning key.
func (r Requirements) String() string {
	var b strings.Builder
	for i, k := range r.Keys() {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(r[k].String())
		if mv := r[k].MinValues; mv != nil {
			fmt.Fprintf(&b, " (minValues %d)", *mv)
		}
	}
	return b.String()
}
