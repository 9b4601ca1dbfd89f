package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

const (
	// ConditionTypeValidationSucceeded is True when the overlay passed the
	// runtime validation and conflicts with no overlay of its weight; only
	// then is it applied.
	ConditionTypeValidationSucceeded = "ValidationSucceeded"

	// ReasonRuntimeValidation: the spec is invalid in a way CEL does not catch.
	ReasonRuntimeValidation = "RuntimeValidation"
	// ReasonConflict: an overlay of the same weight sets the same
	// offering's price or the same resource.
	ReasonConflict = "Conflict"
)

// NodeOverlayStatus is the observed state of a NodeOverlay.
type NodeOverlayStatus struct {
	// Conditions of the NodeOverlay: ValidationSucceeded and its root, Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// StatusConditions returns the NodeOverlay's conditions; Ready follows
// ValidationSucceeded.
func (in *NodeOverlay) StatusConditions() karpv1.ConditionSet {
	return karpv1.NewConditionSet(&in.Status.Conditions, in.Generation, karpv1.ConditionTypeReady, ConditionTypeValidationSucceeded)
}
