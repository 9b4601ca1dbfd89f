// Package v1alpha1 holds the karpenter.kwok.sh/v1alpha1 API: KWOKNodeClass,
// the NodeClass of karp's kwok provider, and the instance label keys that
// provider puts on its fake nodes.
//
// Like pkg/apis/v1 it imports only Kubernetes API packages and karp's
// karpenter.sh/v1 types; validation is in kubebuilder markers.
//
// +k8s:deepcopy-gen=package
// +kubebuilder:object:generate=true
// +groupName=karpenter.kwok.sh
package v1alpha1
