// Package v1beta1 holds the autoscaling.x-k8s.io/v1beta1 CapacityBuffer API
// of Cluster Autoscaler, which karp serves behind the CapacityBuffer
// feature gate as upstream Karpenter does (see docs/controller.md,
// "CapacityBuffer").
//
// Manifests written for Cluster Autoscaler or upstream Karpenter decode
// unchanged into these types: field names, JSON names and validation follow
// kubernetes/autoscaler cluster-autoscaler/apis/capacitybuffer
// (autoscaling.x-k8s.io/v1beta1), as upstream Karpenter copies them
// (kubernetes-sigs/karpenter pkg/apis/autoscaling/v1beta1). A buffer
// describes pods that are never created: karp keeps room for them.
//
// The package imports only Kubernetes API packages. It shares the API group
// with ProvisioningRequest (package autoscaling/v1), at another version.
//
// +k8s:deepcopy-gen=package
// +kubebuilder:object:generate=true
// +groupName=autoscaling.x-k8s.io
package v1beta1
