package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// KWOKNodeClass configures how the kwok provider fakes instances. NodePools
// point at it through spec.template.spec.nodeClassRef.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=kwoknodeclasses,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type KWOKNodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec KWOKNodeClassSpec `json:"spec,omitempty"`
	// +optional
	Status KWOKNodeClassStatus `json:"status,omitempty"`
}

// KWOKNodeClassList is a list of KWOKNodeClasses.
//
// +kubebuilder:object:root=true
type KWOKNodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KWOKNodeClass `json:"items"`
}

// KWOKNodeClassSpec is the desired behaviour of the fake instances.
type KWOKNodeClassSpec struct {
	// NodeRegistrationDelay is how long after launch the fake Node appears,
	// standing in for instance boot time.
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:Type="string"
	// +optional
	NodeRegistrationDelay *metav1.Duration `json:"nodeRegistrationDelay,omitempty"`
}

// KWOKNodeClassStatus is the observed state of a KWOKNodeClass.
type KWOKNodeClassStatus struct {
	// Conditions of the KWOKNodeClass; Ready tells NodePools it can be used.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ConditionTypeReady is the root condition of a KWOKNodeClass.
const ConditionTypeReady = karpv1.ConditionTypeReady

// StatusConditions returns the KWOKNodeClass's conditions. Ready has no
// dependents: the kwok provider sets it directly.
func (in *KWOKNodeClass) StatusConditions() karpv1.ConditionSet {
	return karpv1.NewConditionSet(&in.Status.Conditions, in.Generation, ConditionTypeReady)
}
