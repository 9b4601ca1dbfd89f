package simulation

import (
	"math/rand/v2"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSelectorKeyDecidesTheSelector: the interning key of a term selector
// (labels, expressions, the pod's values of matchLabelKeys and
// mismatchLabelKeys) is equal only for terms that parse to the same
// selector, and the interned selector is the one parsing would build.
func TestSelectorKeyDecidesTheSelector(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	keys := []string{"app", "tier", "team"}
	vals := []string{"a", "b", ""}
	pick := func(list []string) string { return list[rng.IntN(len(list))] }
	some := func(list []string) []string {
		var out []string
		for _, x := range list {
			if rng.IntN(3) == 0 {
				out = append(out, x)
			}
		}
		return out
	}
	top := newTopology(nil)
	parsedByKey := map[string]string{}
	for range 5000 {
		var ls *metav1.LabelSelector
		if rng.IntN(10) > 0 {
			ls = &metav1.LabelSelector{}
			if rng.IntN(2) == 0 {
				ls.MatchLabels = map[string]string{}
				for _, k := range some(keys) {
					ls.MatchLabels[k] = pick(vals)
				}
			}
			for range rng.IntN(3) {
				op := []metav1.LabelSelectorOperator{metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn,
					metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist}[rng.IntN(4)]
				e := metav1.LabelSelectorRequirement{Key: pick(keys), Operator: op}
				if op == metav1.LabelSelectorOpIn || op == metav1.LabelSelectorOpNotIn {
					e.Values = append([]string{pick(vals)}, some(vals)...)
				}
				ls.MatchExpressions = append(ls.MatchExpressions, e)
			}
		}
		podLabels := map[string]string{}
		for _, k := range some(keys) {
			podLabels[k] = pick(vals)
		}
		match, mismatch := some(keys), some(keys)
		want := parseSelector(ls, podLabels, match, mismatch).String()
		got := top.selectorFor(ls, podLabels, match, mismatch)
		if got.str != want || got.sel.String() != want {
			t.Fatalf("interned selector %q (%q), parsing gives %q", got.str, got.sel.String(), want)
		}
		key := string(appendSelectorKey(nil, ls, podLabels, match, mismatch))
		if prev, ok := parsedByKey[key]; ok && prev != want {
			t.Fatalf("key %q for both %q and %q", key, prev, want)
		}
		parsedByKey[key] = want
	}
	if len(top.selectors) < 200 {
		t.Fatalf("only %d distinct selectors drawn", len(top.selectors))
	}
}
