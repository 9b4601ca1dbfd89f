package lifecycle

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// jsonPatchOp is one RFC 6902 operation.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// nodeSyncPatch is a JSON patch taking a Node from stored to node for the
// fields registration writes: labels, annotations, finalizers and owner
// references are added key by key, so concurrent writers' keys survive;
// the taint list, which has no merge key and must be replaced whole, is
// guarded by a test of the list it was computed from. Unlike an
// optimistic lock on the whole object, that test does not fail when the
// kubelet (or kwok) only updated the Node's status meanwhile, which on a
// new node happens every few hundred milliseconds; it does fail, and the
// sync is retried, if someone changed the taints, so a taint others
// removed meanwhile (node.kubernetes.io/not-ready) is never put back.
func nodeSyncPatch(stored, node *corev1.Node) (client.Patch, error) {
	var ops []jsonPatchOp
	ops = append(ops, mapOps("/metadata/labels", stored.Labels, node.Labels)...)
	ops = append(ops, mapOps("/metadata/annotations", stored.Annotations, node.Annotations)...)
	ops = append(ops, listOps("/metadata/finalizers", stored.Finalizers, node.Finalizers, func(a, b string) bool { return a == b })...)
	ops = append(ops, listOps("/metadata/ownerReferences", stored.OwnerReferences, node.OwnerReferences,
		func(a, b metav1.OwnerReference) bool { return a.UID == b.UID })...)
	if !equality.Semantic.DeepEqual(stored.Spec.Taints, node.Spec.Taints) {
		switch {
		case len(stored.Spec.Taints) == 0:
			ops = append(ops, jsonPatchOp{Op: "add", Path: "/spec/taints", Value: node.Spec.Taints})
		default:
			if elementOps, ok := taintOps(stored.Spec.Taints, node.Spec.Taints); ok {
				ops = append(ops, elementOps...)
				break
			}
			ops = append(ops,
				jsonPatchOp{Op: "test", Path: "/spec/taints", Value: stored.Spec.Taints},
				jsonPatchOp{Op: "replace", Path: "/spec/taints", Value: nonNil(node.Spec.Taints)})
		}
	}
	raw, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encoding node patch: %w", err)
	}
	return client.RawPatch(types.JSONPatchType, raw), nil
}

// taintOps edits the taint list element by element when after is before
// with some taints removed and others appended (what registration does:
// the unregistered taint goes, the NodeClaim's and the batch hold come).
// Each removal is guarded by a test of that element at its index, so the
// patch still fails, and is retried, if a taint before it went or it was
// changed meanwhile; but taints others appended or removed after it (the
// node lifecycle controller adds and lifts not-ready right as a node
// registers) no longer fail the whole sync, as a test of the whole list
// did for about half the nodes of a large scale-up. ok is false when the
// change is not of that shape.
func taintOps(before, after []corev1.Taint) ([]jsonPatchOp, bool) {
	var removed []int
	next := 0 // the first element of after not matched to a kept one
	for i := range before {
		if next < len(after) && equality.Semantic.DeepEqual(before[i], after[next]) {
			next++
			continue
		}
		removed = append(removed, i)
	}
	for _, t := range after[next:] {
		if slices.ContainsFunc(before, func(have corev1.Taint) bool { return equality.Semantic.DeepEqual(have, t) }) {
			return nil, false // reordered, not only removed and appended
		}
	}
	ops := make([]jsonPatchOp, 0, 2*len(removed)+len(after)-next)
	// Highest index first, so each removal leaves the lower indexes valid.
	for _, i := range slices.Backward(removed) {
		path := fmt.Sprintf("/spec/taints/%d", i)
		ops = append(ops, jsonPatchOp{Op: "test", Path: path, Value: before[i]}, jsonPatchOp{Op: "remove", Path: path})
	}
	for _, t := range after[next:] {
		ops = append(ops, jsonPatchOp{Op: "add", Path: "/spec/taints/-", Value: t})
	}
	return ops, true
}

// mapOps adds or replaces each key of after that before lacks or differs
// on, and removes each key of before that after lacks.
func mapOps(path string, before, after map[string]string) []jsonPatchOp {
	if len(before) == 0 {
		if len(after) == 0 {
			return nil
		}
		return []jsonPatchOp{{Op: "add", Path: path, Value: after}}
	}
	var ops []jsonPatchOp
	for _, k := range sortedKeys(after) {
		if v, ok := before[k]; !ok || v != after[k] {
			ops = append(ops, jsonPatchOp{Op: "add", Path: path + "/" + escapePointer(k), Value: after[k]})
		}
	}
	for _, k := range sortedKeys(before) {
		if _, ok := after[k]; !ok {
			ops = append(ops, jsonPatchOp{Op: "remove", Path: path + "/" + escapePointer(k)})
		}
	}
	return ops
}

// listOps appends the items of after that before lacks; registration only
// ever adds to these lists.
func listOps[T any](path string, before, after []T, same func(a, b T) bool) []jsonPatchOp {
	var added []T
	for _, item := range after {
		if !slices.ContainsFunc(before, func(have T) bool { return same(have, item) }) {
			added = append(added, item)
		}
	}
	if len(added) == 0 {
		return nil
	}
	if len(before) == 0 {
		return []jsonPatchOp{{Op: "add", Path: path, Value: added}}
	}
	ops := make([]jsonPatchOp, 0, len(added))
	for _, item := range added {
		ops = append(ops, jsonPatchOp{Op: "add", Path: path + "/-", Value: item})
	}
	return ops
}

func nonNil(taints []corev1.Taint) []corev1.Taint {
	if taints == nil {
		return []corev1.Taint{}
	}
	return taints
}

func sortedKeys(m map[string]string) []string {
	keys := slices.Collect(maps.Keys(m))
	sort.Strings(keys)
	return keys
}

// escapePointer escapes a map key for a JSON pointer (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
