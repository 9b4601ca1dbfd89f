// Package v1 holds the karpenter.sh/v1 API: NodePool and NodeClaim, their
// status conditions, and the well-known labels, annotations, taints and
// finalizer karp puts on cluster objects.
//
// Users' manifests written for upstream Karpenter must decode unchanged into
// these types, so field names, JSON names, defaults and validation follow the
// upstream karpenter.sh/v1 schema. Admission is the API server's: the rules
// live in kubebuilder markers (OpenAPI and CEL) compiled into the CRDs in
// pkg/apis/crds, with no webhook. RuntimeValidate repeats them in Go for the
// controller that reports a NodePool's ValidationSucceeded condition.
//
// The package imports only k8s.io/api, k8s.io/apimachinery and small pure
// helpers (robfig/cron for budget schedules, k8s.io/utils/clock for
// condition timestamps); never controller-runtime or client-go, so the pure
// scheduling core may depend on it. Budget evaluation takes the time as an
// argument; condition sets use the real clock unless given one WithClock.
//
// +k8s:deepcopy-gen=package
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1
