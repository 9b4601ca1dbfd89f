// Package v1 holds the autoscaling.x-k8s.io/v1 ProvisioningRequest API of
// Cluster Autoscaler, which karp serves behind the ProvisioningRequest
// feature gate (see docs/controller.md, "ProvisioningRequest").
//
// Manifests written for Cluster Autoscaler decode unchanged into these
// types: field names, JSON names and validation follow
// kubernetes/autoscaler cluster-autoscaler/apis/provisioningrequest
// (autoscaling.x-k8s.io/v1). The pods a request describes are core
// PodTemplates in the request's namespace, referenced by name.
//
// The package imports only Kubernetes API packages.
//
// +k8s:deepcopy-gen=package
// +kubebuilder:object:generate=true
// +groupName=autoscaling.x-k8s.io
package v1
