package scheduling

import (
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// randomRequirements draws a conjunction over a few keys from every
// operator, with repeated keys intersected and MinValues on some.
func randomRequirements(rng *rand.Rand) Requirements {
	ops := []corev1.NodeSelectorOperator{corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
		corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, OpGte, OpLte}
	values := []string{"1", "2", "3", "a", "b"}
	out := Requirements{}
	for range rng.IntN(5) {
		op := ops[rng.IntN(len(ops))]
		var vals []string
		switch op {
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, OpGte, OpLte:
			vals = []string{values[rng.IntN(3)]}
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			for _, v := range values {
				if rng.IntN(2) == 0 {
					vals = append(vals, v)
				}
			}
		}
		r := NewRequirement([]string{"k1", "k2", "k3"}[rng.IntN(3)], op, vals...)
		if rng.IntN(4) == 0 {
			r.MinValues = ptr.To(1 + rng.IntN(2))
		}
		out.Add(r)
	}
	return out
}

// TestAppendKeyIsAnInterningKey: two conjunctions get the same AppendKey
// exactly when they render the same (String, the key it replaces), and
// AppendIntersectionKey is the key of the intersection it does not build.
func TestAppendKeyIsAnInterningKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	seen := map[string]string{} // AppendKey -> String
	byString := map[string]string{}
	for range 20000 {
		a, b := randomRequirements(rng), randomRequirements(rng)
		want := a.Intersection(b).AppendKey(nil)
		if got := a.AppendIntersectionKey(nil, b); string(got) != string(want) {
			t.Fatalf("AppendIntersectionKey(%s | %s) = %q, want %q", a, b, got, want)
		}
		for _, r := range []Requirements{a, b, a.Intersection(b)} {
			key, str := string(r.AppendKey(nil)), r.String()
			if prev, ok := seen[key]; ok && prev != str {
				t.Fatalf("key %q for both %q and %q", key, prev, str)
			}
			if prev, ok := byString[str]; ok && prev != key {
				t.Fatalf("%q has keys %q and %q", str, prev, key)
			}
			seen[key], byString[str] = str, key
		}
	}
	if len(seen) < 500 {
		t.Fatalf("only %d distinct conjunctions drawn", len(seen))
	}
}
