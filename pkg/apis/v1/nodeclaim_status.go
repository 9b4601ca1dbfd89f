package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeClaim condition types.
const (
	// ConditionTypeLaunched is True once the cloud provider created the instance.
	ConditionTypeLaunched = "Launched"
	// ConditionTypeRegistered is True once the instance's Node joined the cluster.
	ConditionTypeRegistered = "Registered"
	// ConditionTypeInitialized is True once the Node is Ready, its startup
	// taints are gone and its requested resources are registered.
	ConditionTypeInitialized = "Initialized"
	// ConditionTypeDrifted is True when the node no longer matches its
	// NodePool or NodeClass.
	ConditionTypeDrifted = "Drifted"
	// ConditionTypeConsolidatable is True when consolidateAfter has passed
	// since the last pod event on the node.
	ConditionTypeConsolidatable = "Consolidatable"
	// ConditionTypeDisruptionReason is True while a disruption command holds
	// the node; its reason is the DisruptionReason.
	ConditionTypeDisruptionReason = "DisruptionReason"
	// ConditionTypeDrained is True once the Node was drained during termination.
	ConditionTypeDrained = "Drained"
	// ConditionTypeVolumesDetached is True once no volume attachments block termination.
	ConditionTypeVolumesDetached = "VolumesDetached"
	// ConditionTypeInstanceTerminating is True once the instance delete was issued.
	ConditionTypeInstanceTerminating = "InstanceTerminating"
	// ConditionTypeConsistentStateFound is False when the Node disagrees with
	// the NodeClaim (for example, smaller capacity than launched).
	ConditionTypeConsistentStateFound = "ConsistentStateFound"
	// ConditionTypeRebalanceRecommended (karp's own) is True once the cloud
	// recommended rebalancing the NodeClaim's spot instance and its NodePool
	// opted in to replacement (SpotRebalanceAnnotationKey): the disruption
	// controller then replaces the node, replacement first. It is never
	// cleared; the NodeClaim goes with its node.
	ConditionTypeRebalanceRecommended = "RebalanceRecommended"
)

// NodeClaimStatus is the observed state of a NodeClaim.
type NodeClaimStatus struct {
	// NodeName is the name of the Node registered for this claim.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// ProviderID is the cloud provider's identifier of the instance.
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// ImageID is the image the instance runs.
	// +optional
	ImageID string `json:"imageID,omitempty"`
	// Capacity is the instance's total capacity.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Allocatable is the capacity left for pods.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Conditions of the NodeClaim.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LastPodEventTime is the last time a pod was bound to, finished on or
	// started terminating on the node; consolidateAfter counts from it.
	// +optional
	LastPodEventTime metav1.Time `json:"lastPodEventTime,omitempty"`
}

// StatusConditions returns the NodeClaim's conditions; Ready is True when
// Launched, Registered and Initialized are.
func (in *NodeClaim) StatusConditions() ConditionSet {
	return NewConditionSet(&in.Status.Conditions, in.Generation, ConditionTypeReady,
		ConditionTypeLaunched, ConditionTypeRegistered, ConditionTypeInitialized)
}
