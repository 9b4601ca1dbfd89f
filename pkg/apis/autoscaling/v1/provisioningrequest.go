package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProvisioningRequest asks for capacity for a group of pods that do not
// exist yet: check whether the cluster holds them now
// (check-capacity.autoscaling.x-k8s.io), or launch the nodes for all of
// them or none (best-effort-atomic-scale-up.autoscaling.x-k8s.io). The
// spec is immutable; to change a request, delete it and create another.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=provreq;provreqs
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type ProvisioningRequest struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is the pods to find or make room for, and how.
	// +kubebuilder:validation:Required
	Spec ProvisioningRequestSpec `json:"spec"`
	// Status is what the autoscaler found or did.
	// +optional
	Status ProvisioningRequestStatus `json:"status,omitempty"`
}

// ProvisioningRequestList is a list of ProvisioningRequests.
//
// +kubebuilder:object:root=true
type ProvisioningRequestList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata"`
	// +optional
	Items []ProvisioningRequest `json:"items"`
}

// ProvisioningRequestSpec describes the pods a request is for.
type ProvisioningRequestSpec struct {
	// PodSets lists the groups of pods to provision for.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Value is immutable"
	PodSets []PodSet `json:"podSets"`

	// ProvisioningClassName is the mode of provisioning:
	// check-capacity.autoscaling.x-k8s.io checks whether the cluster holds
	// the pods now, launching nothing;
	// best-effort-atomic-scale-up.autoscaling.x-k8s.io launches the nodes
	// for all the pods or for none, retrying until ValidUntilSeconds (a
	// parameter) passes. Other classes are left to other autoscalers.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Value is immutable"
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:MaxLength=253
	ProvisioningClassName string `json:"provisioningClassName"`

	// Parameters are the class's other settings;
	// best-effort-atomic-scale-up.autoscaling.x-k8s.io reads
	// ValidUntilSeconds, how long after creation to keep retrying.
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Value is immutable"
	// +kubebuilder:validation:MaxProperties=100
	Parameters map[string]Parameter `json:"parameters,omitempty"`
}

// Parameter is one class parameter's value.
// +kubebuilder:validation:MaxLength=255
type Parameter string

// PodSet is one group of identical pods.
type PodSet struct {
	// PodTemplateRef names the PodTemplate, in the request's namespace, of
	// the pods that will consume the capacity. Their scheduling fields
	// (node selector, affinity, tolerations, requests) must match the
	// template's.
	//
	// +kubebuilder:validation:Required
	PodTemplateRef Reference `json:"podTemplateRef"`
	// Count is the number of pods of the template.
	//
	// +kubebuilder:validation:Minimum=1
	Count int32 `json:"count"`
}

// Reference names an object in the request's namespace.
type Reference struct {
	// Name of the referenced object.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
}

// ProvisioningRequestStatus is what the autoscaler found or did.
type ProvisioningRequestStatus struct {
	// Conditions are Accepted, Provisioned, Failed, BookingExpired and
	// CapacityRevoked (see the constants).
	//
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// ProvisioningClassDetails are other values a class reports.
	//
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	ProvisioningClassDetails map[string]Detail `json:"provisioningClassDetails,omitempty"`
}

// Detail is one class detail's value.
// +kubebuilder:validation:MaxLength=32768
type Detail string

// Condition types, as Cluster Autoscaler names them.
const (
	// Accepted is True once an autoscaler serves the request's class.
	Accepted = "Accepted"
	// Provisioned is True once the capacity exists (check-capacity: was
	// found; atomic: was launched); False while it is not found, with the
	// reason.
	Provisioned = "Provisioned"
	// Failed is True once the request will not be provisioned (its pod
	// templates are missing, or ValidUntilSeconds passed); terminal.
	Failed = "Failed"
	// BookingExpired is True once the booking period after Provisioned
	// passed: the capacity is no longer held for the request's pods.
	BookingExpired = "BookingExpired"
	// CapacityRevoked is True when provisioned capacity was taken back
	// (karp does not set it).
	CapacityRevoked = "CapacityRevoked"
)

// Provisioning classes and pod annotations, as Cluster Autoscaler names them.
const (
	// ProvisioningClassCheckCapacity checks whether the cluster holds the
	// pods now, without launching anything.
	ProvisioningClassCheckCapacity = "check-capacity.autoscaling.x-k8s.io"
	// ProvisioningClassBestEffortAtomicScaleUp launches the nodes for all
	// the pods or none.
	ProvisioningClassBestEffortAtomicScaleUp = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
	// ConsumeAnnotationKey on a pod names the request (in the pod's
	// namespace) whose capacity it consumes.
	ConsumeAnnotationKey = "autoscaling.x-k8s.io/consume-provisioning-request"
	// LegacyConsumeAnnotationKey is the older spelling of
	// ConsumeAnnotationKey, still honoured by Cluster Autoscaler.
	LegacyConsumeAnnotationKey = "cluster-autoscaler.kubernetes.io/consume-provisioning-request"
	// ProvisioningClassPodAnnotationKey on a pod names the class of the
	// request it consumes.
	ProvisioningClassPodAnnotationKey = "autoscaling.x-k8s.io/provisioning-class-name"
	// ValidUntilSecondsParameter is the atomic class's retry bound, in
	// seconds since the request's creation.
	ValidUntilSecondsParameter = "ValidUntilSeconds"
)

// ConsumedRequest returns the name of the request whose capacity the pod
// annotations say it consumes, or "".
func ConsumedRequest(annotations map[string]string) string {
	if name := annotations[ConsumeAnnotationKey]; name != "" {
		return name
	}
	return annotations[LegacyConsumeAnnotationKey]
}
