package scheduling

import (
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// req parses "In a b", "NotIn a", "Exists", "DoesNotExist", "Gt 3", "Lte 7".
func req(spec string) *Requirement {
	f := strings.Fields(spec)
	return NewRequirement("k", corev1.NodeSelectorOperator(f[0]), f[1:]...)
}

func TestRequirementHas(t *testing.T) {
	tests := map[string]struct {
		spec    string
		has     []string
		hasNot  []string
		absent  bool
		wantLen int
	}{
		"In":                   {spec: "In a b", has: []string{"a", "b"}, hasNot: []string{"c", ""}, wantLen: 2},
		"NotIn":                {spec: "NotIn a", has: []string{"b", "zz"}, hasNot: []string{"a"}, absent: true, wantLen: -1},
		"Exists":               {spec: "Exists", has: []string{"a", "1"}, wantLen: -1},
		"DoesNotExist":         {spec: "DoesNotExist", hasNot: []string{"a"}, absent: true, wantLen: 0},
		"Gt":                   {spec: "Gt 3", has: []string{"4", "100"}, hasNot: []string{"3", "0", "x", "-5"}, wantLen: -1},
		"Lt":                   {spec: "Lt 3", has: []string{"2", "-1"}, hasNot: []string{"3", "x"}, wantLen: -1},
		"Gte":                  {spec: "Gte 3", has: []string{"3", "4"}, hasNot: []string{"2"}, wantLen: -1},
		"Lte":                  {spec: "Lte 3", has: []string{"3", "0"}, hasNot: []string{"4"}, wantLen: -1},
		"Gt with a non-number": {spec: "Gt x", hasNot: []string{"1", "x"}, wantLen: 0},
		"Gt with two values":   {spec: "Gt 1 2", hasNot: []string{"3"}, wantLen: 0},
		"unknown operator":     {spec: "Near a", hasNot: []string{"a"}, wantLen: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := req(tc.spec)
			for _, v := range tc.has {
				if !r.Has(v) {
					t.Errorf("%s: Has(%q) = false, want true", tc.spec, v)
				}
			}
			for _, v := range tc.hasNot {
				if r.Has(v) {
					t.Errorf("%s: Has(%q) = true, want false", tc.spec, v)
				}
			}
			if r.AcceptsAbsent() != tc.absent {
				t.Errorf("%s: AcceptsAbsent = %v, want %v", tc.spec, r.AcceptsAbsent(), tc.absent)
			}
			wantLen := tc.wantLen
			if wantLen < 0 {
				wantLen = int(^uint(0) >> 1)
			}
			if r.Len() != wantLen {
				t.Errorf("%s: Len = %d, want %d", tc.spec, r.Len(), wantLen)
			}
		})
	}
}

func TestRequirementIntersection(t *testing.T) {
	tests := map[string]struct {
		a, b       string
		want       string // String() of the intersection (key k)
		intersects bool
	}{
		"In ∩ In overlap":                {a: "In a b", b: "In b c", want: "k In [b]", intersects: true},
		"In ∩ In disjoint":               {a: "In a", b: "In b", want: "k In []", intersects: false},
		"In ∩ NotIn":                     {a: "In a b", b: "NotIn a", want: "k In [b]", intersects: true},
		"NotIn ∩ NotIn":                  {a: "NotIn a", b: "NotIn b", want: "k NotIn [a b]", intersects: true},
		"Exists ∩ NotIn":                 {a: "Exists", b: "NotIn a", want: "k Exists, k NotIn [a]", intersects: true},
		"Exists ∩ DoesNotExist":          {a: "Exists", b: "DoesNotExist", want: "k In []", intersects: false},
		"DoesNotExist ∩ DoesNotExist":    {a: "DoesNotExist", b: "DoesNotExist", want: "k DoesNotExist", intersects: true},
		"NotIn ∩ DoesNotExist":           {a: "NotIn a", b: "DoesNotExist", want: "k DoesNotExist", intersects: true},
		"In ∩ DoesNotExist":              {a: "In a", b: "DoesNotExist", want: "k In []", intersects: false},
		"Gt ∩ Lt":                        {a: "Gt 2", b: "Lt 5", want: "k Gte 3, k Lte 4", intersects: true},
		"Gt ∩ Lt empty":                  {a: "Gt 4", b: "Lt 5", want: "k In []", intersects: false},
		"Gte ∩ Lte single":               {a: "Gte 4", b: "Lte 4", want: "k Gte 4, k Lte 4", intersects: true},
		"Gt ∩ In filters values":         {a: "Gt 2", b: "In 1 3 x 9", want: "k In [3 9]", intersects: true},
		"Lt ∩ In none left":              {a: "Lt 1", b: "In 1 3", want: "k In []", intersects: false},
		"Gt ∩ NotIn keeps the exclusion": {a: "Gt 2", b: "NotIn 5", want: "k Gte 3, k NotIn [5]", intersects: true},
		"Gt ∩ DoesNotExist":              {a: "Gt 2", b: "DoesNotExist", want: "k In []", intersects: false},
		"Exists ∩ Exists":                {a: "Exists", b: "Exists", want: "k Exists", intersects: true},
		"In ∩ Exists":                    {a: "In a", b: "Exists", want: "k In [a]", intersects: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a, b := req(tc.a), req(tc.b)
			got := a.Intersection(b)
			if got.String() != tc.want {
				t.Errorf("%s ∩ %s = %q, want %q", tc.a, tc.b, got.String(), tc.want)
			}
			if rev := b.Intersection(a); rev.String() != got.String() {
				t.Errorf("not commutative: %q vs %q", got.String(), rev.String())
			}
			if a.Intersects(b) != tc.intersects || b.Intersects(a) != tc.intersects {
				t.Errorf("Intersects = %v/%v, want %v", a.Intersects(b), b.Intersects(a), tc.intersects)
			}
		})
	}
}

func TestRequirementsCompatible(t *testing.T) {
	wellKnown := sets.New(corev1.LabelTopologyZone, corev1.LabelArchStable)
	tests := map[string]struct {
		node, pod Requirements
		wantErr   string // substring; "" means compatible
	}{
		"well-known key undefined on the node side": {
			node: Requirements{}, pod: NewRequirements(NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "a")),
		},
		"custom key undefined on the node side": {
			node: Requirements{}, pod: NewRequirements(NewRequirement("team", corev1.NodeSelectorOpIn, "x")),
			wantErr: "label team is not defined by the NodePool",
		},
		"custom NotIn with the key undefined": {
			node: Requirements{}, pod: NewRequirements(NewRequirement("team", corev1.NodeSelectorOpNotIn, "x")),
		},
		"custom DoesNotExist with the key undefined": {
			node: Requirements{}, pod: NewRequirements(NewRequirement("team", corev1.NodeSelectorOpDoesNotExist)),
		},
		"custom Exists with the key undefined": {
			node: Requirements{}, pod: NewRequirements(NewRequirement("team", corev1.NodeSelectorOpExists)),
			wantErr: "label team is not defined",
		},
		"defined and intersecting": {
			node: NewLabelRequirements(map[string]string{"team": "x"}), pod: NewRequirements(NewRequirement("team", corev1.NodeSelectorOpIn, "x", "y")),
		},
		"defined and disjoint": {
			node: NewLabelRequirements(map[string]string{"team": "x"}), pod: NewRequirements(NewRequirement("team", corev1.NodeSelectorOpIn, "y")),
			wantErr: "requires team In [y], NodePool allows team In [x]",
		},
		"defined and DoesNotExist": {
			node: NewLabelRequirements(map[string]string{"team": "x"}), pod: NewRequirements(NewRequirement("team", corev1.NodeSelectorOpDoesNotExist)),
			wantErr: "requires team DoesNotExist",
		},
		"numeric bound against a node value": {
			node: NewLabelRequirements(map[string]string{"cpu": "8"}), pod: NewRequirements(NewRequirement("cpu", corev1.NodeSelectorOpGt, "4")),
		},
		"numeric bound not met": {
			node: NewLabelRequirements(map[string]string{"cpu": "2"}), pod: NewRequirements(NewRequirement("cpu", corev1.NodeSelectorOpGt, "4")),
			wantErr: "requires cpu Gte 5",
		},
		"beta label normalized": {
			node:    NewLabelRequirements(map[string]string{"failure-domain.beta.kubernetes.io/zone": "a"}),
			pod:     NewNodeSelectorRequirements(corev1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}),
			wantErr: "requires topology.kubernetes.io/zone In [b]",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tc.node.Compatible(tc.pod, wellKnown)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Compatible() = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Compatible() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestStrictlyCompatible(t *testing.T) {
	node := NewLabelRequirements(map[string]string{"team": "x", corev1.LabelTopologyZone: "a"})
	if err := node.StrictlyCompatible(NewRequirements(NewRequirement("gpu", corev1.NodeSelectorOpIn, "yes"))); err == nil {
		t.Fatal("a node without the label must not match In")
	}
	if err := node.StrictlyCompatible(NewRequirements(NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"))); err == nil {
		t.Fatal("well-known keys get no allowance on existing nodes")
	}
	if err := node.StrictlyCompatible(NewRequirements(NewRequirement("gpu", corev1.NodeSelectorOpNotIn, "yes"))); err != nil {
		t.Fatalf("NotIn must match a node without the label: %v", err)
	}
}

// FuzzRequirementAlgebra checks the set algebra: intersection is
// commutative, membership of the intersection is the conjunction of
// memberships, Intersects agrees with the intersection being non-empty, and
// integer bounds behave as inclusive/exclusive bounds.
func FuzzRequirementAlgebra(f *testing.F) {
	f.Add(uint8(0), "a b", uint8(1), "b", "b", int64(3))
	f.Add(uint8(4), "3", uint8(5), "7", "5", int64(5))
	f.Add(uint8(6), "3", uint8(3), "", "3", int64(3))
	f.Add(uint8(2), "", uint8(1), "x", "", int64(-2))
	f.Fuzz(func(t *testing.T, opA uint8, valsA string, opB uint8, valsB, probe string, n int64) {
		ops := []corev1.NodeSelectorOperator{corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
			corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, OpGte, OpLte}
		a := NewRequirement("k", ops[int(opA)%len(ops)], strings.Fields(valsA)...)
		b := NewRequirement("k", ops[int(opB)%len(ops)], strings.Fields(valsB)...)
		ab, ba := a.Intersection(b), b.Intersection(a)
		if ab.String() != ba.String() {
			t.Fatalf("not commutative: %q vs %q", ab, ba)
		}
		for _, v := range []string{probe, strconv.FormatInt(n, 10)} {
			if ab.Has(v) != (a.Has(v) && b.Has(v)) {
				t.Fatalf("(%s ∩ %s).Has(%q) = %v, want %v", a, b, v, ab.Has(v), a.Has(v) && b.Has(v))
			}
		}
		if ab.AcceptsAbsent() != (a.AcceptsAbsent() && b.AcceptsAbsent()) {
			t.Fatalf("absence not conjunctive for %s ∩ %s", a, b)
		}
		if a.Intersects(b) != !ab.IsEmpty() || b.Intersects(a) != !ab.IsEmpty() {
			t.Fatalf("Intersects(%s, %s) = %v but intersection %q empty=%v", a, b, a.Intersects(b), ab, ab.IsEmpty())
		}
		if (a.Has(probe) && b.Has(probe)) && !a.Intersects(b) {
			t.Fatalf("%s and %s share %q but do not intersect", a, b, probe)
		}
		if ab.Intersection(a).String() != ab.String() {
			t.Fatalf("intersection not idempotent: %q", ab)
		}
		if n > -1<<62 && n < 1<<62 {
			gt := NewRequirement("k", corev1.NodeSelectorOpGt, strconv.FormatInt(n, 10))
			lt := NewRequirement("k", corev1.NodeSelectorOpLt, strconv.FormatInt(n, 10))
			for _, d := range []int64{-1, 0, 1} {
				v := strconv.FormatInt(n+d, 10)
				if gt.Has(v) != (d > 0) || lt.Has(v) != (d < 0) {
					t.Fatalf("bounds wrong at %d%+d: Gt=%v Lt=%v", n, d, gt.Has(v), lt.Has(v))
				}
			}
		}
	})
}
