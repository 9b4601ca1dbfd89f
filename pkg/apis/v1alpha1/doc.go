// Package v1alpha1 holds the karpenter.sh/v1alpha1 API: NodeOverlay, which
// adjusts the prices and extended-resource capacity of the instance types
// NodePools see (behind the NodeOverlay feature gate, as upstream).
//
// Manifests written for upstream Karpenter's NodeOverlay decode unchanged
// into these types: field names, JSON names and validation follow upstream
// (kubernetes-sigs/karpenter pkg/apis/v1alpha1). Admission is the API
// server's, from the kubebuilder markers (OpenAPI and CEL); RuntimeValidate
// repeats what CEL cannot express for the NodeOverlay controller.
//
// Like pkg/apis/v1 the package imports only Kubernetes API packages and
// karp's karpenter.sh/v1 types.
//
// +k8s:deepcopy-gen=package
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1alpha1
