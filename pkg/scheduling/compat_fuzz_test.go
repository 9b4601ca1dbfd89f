package scheduling

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// FuzzStrictlyCompatibleMatchesKubernetes checks that a node's labels
// satisfy a node selector term under StrictlyCompatible exactly when
// Kubernetes' own node affinity matcher says so, for the standard operators.
func FuzzStrictlyCompatibleMatchesKubernetes(f *testing.F) {
	f.Add("a=1 b=x", uint8(0), "a", "1 2", uint8(1), "b", "y")
	f.Add("a=5", uint8(4), "a", "3", uint8(5), "a", "9")
	f.Add("", uint8(3), "a", "", uint8(2), "b", "")
	f.Add("c=7", uint8(1), "c", "7", uint8(4), "c", "x")
	f.Fuzz(func(t *testing.T, nodeLabels string, opA uint8, keyA, valsA string, opB uint8, keyB, valsB string) {
		ops := []corev1.NodeSelectorOperator{corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
			corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt}
		lbls := map[string]string{}
		for _, kv := range strings.Fields(nodeLabels) {
			if k, v, ok := strings.Cut(kv, "="); ok && validLabel(k) && validLabel(v) {
				lbls[k] = v
			}
		}
		var exprs []corev1.NodeSelectorRequirement
		for _, e := range []struct {
			op        uint8
			key, vals string
		}{{opA, keyA, valsA}, {opB, keyB, valsB}} {
			if !validLabel(e.key) {
				return
			}
			op := ops[int(e.op)%len(ops)]
			vals := strings.Fields(e.vals)
			switch op {
			case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
				if len(vals) == 0 {
					return // invalid for Kubernetes
				}
			case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
				vals = nil
			default:
				if len(vals) != 1 {
					return
				}
			}
			exprs = append(exprs, corev1.NodeSelectorRequirement{Key: e.key, Operator: op, Values: vals})
		}
		ns, err := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: exprs}}})
		if err != nil {
			return
		}
		want := ns.Match(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: lbls}})
		got := NewLabelRequirements(lbls).StrictlyCompatible(NewNodeSelectorRequirements(exprs...)) == nil
		if got != want {
			t.Fatalf("labels %v, term %v: karp says %v, Kubernetes %v", lbls, exprs, got, want)
		}
	})
}

// validLabel keeps the fuzzer to plain label names and values (and away
// from the deprecated keys karp normalizes).
func validLabel(s string) bool {
	if s == "" || len(s) > 20 || NormalizeKey(s) != s {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}
