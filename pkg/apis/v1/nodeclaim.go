package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeClaim is karp's request for one node: the provisioner creates it from
// a NodePool template, the cloud provider launches an instance for it, and
// its status follows the instance and the Node through their lifetime.
// Its spec never changes after creation.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodeclaims,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".metadata.labels.node\\.kubernetes\\.io/instance-type"
// +kubebuilder:printcolumn:name="Capacity",type="string",JSONPath=".metadata.labels.karpenter\\.sh/capacity-type"
// +kubebuilder:printcolumn:name="Zone",type="string",JSONPath=".metadata.labels.topology\\.kubernetes\\.io/zone"
// +kubebuilder:printcolumn:name="Node",type="string",JSONPath=".status.nodeName"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="ImageID",type="string",JSONPath=".status.imageID",priority=1
// +kubebuilder:printcolumn:name="ID",type="string",JSONPath=".status.providerID",priority=1
// +kubebuilder:printcolumn:name="NodePool",type="string",JSONPath=".metadata.labels.karpenter\\.sh/nodepool",priority=1
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.nodeClassRef.name",priority=1
// +kubebuilder:printcolumn:name="Drifted",type="string",JSONPath=".status.conditions[?(@.type==\"Drifted\")].status",priority=1
type NodeClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:XValidation:message="spec is immutable",rule="self == oldSelf"
	// +required
	Spec NodeClaimSpec `json:"spec"`
	// +optional
	Status NodeClaimStatus `json:"status,omitempty"`
}

// NodeClaimList is a list of NodeClaims.
//
// +kubebuilder:object:root=true
type NodeClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeClaim `json:"items"`
}

// NodeClaimSpec is what the node must satisfy.
type NodeClaimSpec struct {
	// Taints are put on the Node at registration.
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are put on the Node at registration and must be removed
	// by another agent before the NodeClaim is Initialized.
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements the launched instance must satisfy.
	// +kubebuilder:validation:MaxItems:=100
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements"`
	// Resources the node must be able to hold (the pods it was launched for
	// plus daemonset overhead).
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty"`
	// NodeClassRef names the provider NodeClass the instance is launched with.
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// TerminationGracePeriod is the longest the node drains once deleted.
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type="string"
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// ExpireAfter is how long the node may live, or Never.
	// +kubebuilder:default:="720h"
	// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type="string"
	// +kubebuilder:validation:Schemaless
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitempty"`
}

// ResourceRequirements are the resources a NodeClaim asks for.
type ResourceRequirements struct {
	// Requests is the minimum capacity the node must have.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// NodeClassReference points at a provider NodeClass.
type NodeClassReference struct {
	// Kind of the NodeClass, e.g. KWOKNodeClass.
	// +kubebuilder:validation:XValidation:message="kind may not be empty",rule="self != ''"
	// +required
	Kind string `json:"kind"`
	// Name of the NodeClass.
	// +kubebuilder:validation:XValidation:message="name may not be empty",rule="self != ''"
	// +required
	Name string `json:"name"`
	// Group of the NodeClass, e.g. karpenter.kwok.sh.
	// +kubebuilder:validation:XValidation:message="group may not be empty",rule="self != ''"
	// +kubebuilder:validation:Pattern=`^[^/]*$`
	// +required
	Group string `json:"group"`
}

// NodeSelectorOpGte and NodeSelectorOpLte extend corev1's node selector
// operators (In, NotIn, Exists, DoesNotExist, Gt, Lt) with inclusive
// integer bounds.
const (
	NodeSelectorOpGte corev1.NodeSelectorOperator = "Gte"
	NodeSelectorOpLte corev1.NodeSelectorOperator = "Lte"
)

// NodeSelectorRequirementWithMinValues is a node selector requirement with
// an optional minimum number of distinct values the launch decision must
// keep open (for example at least 3 instance families).
//
// +kubebuilder:validation:XValidation:message="requirements with operator 'In' must have a value defined",rule="self.operator == 'In' ? (has(self.values) && self.values.size() != 0) : true",fieldPath=".values"
// +kubebuilder:validation:XValidation:message="requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single non-negative integer value",rule="(self.operator in ['Gt', 'Lt', 'Gte', 'Lte']) ? (has(self.values) && self.values.size() == 1 && self.values[0].matches('^[0-9]+$')) : true",fieldPath=".values"
// +kubebuilder:validation:XValidation:message="requirements with operator 'Exists' or 'DoesNotExist' must not have values",rule="(self.operator in ['Exists', 'DoesNotExist']) ? (!has(self.values) || self.values.size() == 0) : true",fieldPath=".values"
// +kubebuilder:validation:XValidation:message="requirements with 'minValues' must have at least that many values specified in the 'values' field",rule="(self.operator == 'In' && has(self.minValues)) ? (has(self.values) && self.values.size() >= self.minValues) : true",fieldPath=".minValues"
type NodeSelectorRequirementWithMinValues struct {
	// Key is the label key the requirement selects on.
	// +kubebuilder:validation:MaxLength:=316
	// +kubebuilder:validation:Pattern=`^(([a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)(\.([a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?))*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`
	// +kubebuilder:validation:XValidation:message="label domain \"karpenter.sh\" is restricted",rule="self in ['karpenter.sh/capacity-type', 'karpenter.sh/nodepool'] || !self.matches('^([^/]*[.])?karpenter[.]sh/')"
	// +kubebuilder:validation:XValidation:message="label \"kubernetes.io/hostname\" is restricted",rule="self != 'kubernetes.io/hostname'"
	// +required
	Key string `json:"key"`
	// Operator is In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte or Lte.
	// +kubebuilder:validation:Enum:={In,NotIn,Exists,DoesNotExist,Gt,Lt,Gte,Lte}
	// +required
	Operator corev1.NodeSelectorOperator `json:"operator"`
	// Values for In and NotIn (any number), or the single integer bound for
	// Gt, Lt, Gte and Lte.
	// +kubebuilder:validation:items:MaxLength:=63
	// +kubebuilder:validation:items:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
	// MinValues is the least number of distinct values of Key the launch
	// decision must keep open.
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=50
	// +optional
	MinValues *int `json:"minValues,omitempty"`
}
