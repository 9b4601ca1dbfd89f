package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePool condition types.
const (
	// ConditionTypeValidationSucceeded is False when the NodePool fails the
	// runtime checks the schema cannot express.
	ConditionTypeValidationSucceeded = "ValidationSucceeded"
	// ConditionTypeNodeClassReady mirrors the Ready condition of the NodeClass.
	ConditionTypeNodeClassReady = "NodeClassReady"
	// ConditionTypeNodeRegistrationHealthy is False when recent launches of
	// the pool failed to register; informational, it does not affect Ready.
	ConditionTypeNodeRegistrationHealthy = "NodeRegistrationHealthy"
	// ConditionTypeReplicasServed is karp's own condition of a static
	// NodePool (spec.replicas): True once it has its replicas, all
	// initialized; False, with the reason, while it scales, when its node
	// limit caps it below its replicas, when it cannot launch, or when the
	// StaticCapacity feature gate is off. Informational: not part of Ready.
	// A dynamic NodePool does not carry it.
	ConditionTypeReplicasServed = "ReplicasServed"
	// ConditionTypeReady is the root condition of NodePools and NodeClaims.
	ConditionTypeReady = "Ready"
)

// NodePoolStatus is the observed state of a NodePool.
type NodePoolStatus struct {
	// Resources is the total capacity of the pool's nodes, plus "nodes".
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// Nodes is the number of nodes in the pool.
	// +optional
	Nodes *int64 `json:"nodes,omitempty"`
	// NodeClassObservedGeneration is the NodeClass generation the
	// NodeRegistrationHealthy condition was last evaluated against.
	// +optional
	NodeClassObservedGeneration int64 `json:"nodeClassObservedGeneration,omitempty"`
	// Conditions of the NodePool.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// StatusConditions returns the NodePool's conditions; Ready is True when
// ValidationSucceeded and NodeClassReady are.
func (in *NodePool) StatusConditions() ConditionSet {
	return NewConditionSet(&in.Status.Conditions, in.Generation, ConditionTypeReady,
		ConditionTypeValidationSucceeded, ConditionTypeNodeClassReady)
}
