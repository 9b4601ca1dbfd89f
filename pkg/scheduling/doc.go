// Package scheduling holds karp's pure scheduling vocabulary: the label
// requirement algebra (Requirement, Requirements), taints and tolerations,
// pod resource requests as int64 vectors, host ports, instance types with
// their offerings, and the kube-scheduler style Status used to say why a pod
// does not fit.
//
// The package decides nothing about clusters by itself; pkg/simulation builds
// the bin-packing solver on top of it.
//
// Import rule: only the standard library, k8s.io/api, k8s.io/apimachinery,
// k8s.io/component-helpers/resource (pod requests; it pulls no client) and
// karp's own pkg/apis. Never client-go, controller-runtime or a cloud SDK.
//
// Invariants:
//   - A Requirement is a set of label values: a finite set (In), a
//     complement of a finite set (NotIn, Exists), optionally bounded by
//     inclusive integer bounds (Gt, Lt, Gte, Lte). DoesNotExist is the empty
//     set. Intersection is commutative and associative.
//   - Functions never mutate their arguments unless their name says so
//     (Requirements.Add).
package scheduling
