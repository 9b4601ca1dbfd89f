// Package v1 holds the karpenter.k8s.aws/v1 API: EC2NodeClass, the
// NodeClass of karp's AWS EC2 provider, with the label, annotation and tag
// keys that provider reads and writes on cluster and EC2 objects.
//
// Users bring the EC2NodeClass manifests they wrote for upstream Karpenter
// unchanged, so field names, JSON names, defaults and validation follow the
// upstream karpenter.k8s.aws/v1 schema. Admission is the API server's: the
// rules live in kubebuilder markers (OpenAPI and CEL) compiled into the CRD
// in pkg/apis/crds, with no webhook.
//
// spec.kubelet is the typed KubeletConfiguration of the released upstream
// API (the fields karp uses to size nodes and render user data), validated
// by the API server; upstream's later open-map kubelet with CEL expressions
// behind a feature gate is not offered. Fields upstream added after that
// (placementGroupSelector, connectionTracking, cpuOptions) are not offered
// either: kubectl's strict field validation refuses them by name, where
// accepting them would ignore them at launch.
//
// The package imports only k8s.io/api, k8s.io/apimachinery, karp's
// karpenter.sh/v1 types and the hashstructure library for the drift hash;
// never controller-runtime, client-go or an AWS SDK.
//
// +k8s:deepcopy-gen=package
// +kubebuilder:object:generate=true
// +groupName=karpenter.k8s.aws
package v1
