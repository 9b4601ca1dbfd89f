package test

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/v1alpha1"
)

// NodeOverlayWrapper builds a NodeOverlay:
// MakeNodeOverlay("a").Requirement(key, op, "v").PriceAdjustment("+10%").Obj().
// Every setter replaces the field it names.
type NodeOverlayWrapper struct{ karpv1alpha1.NodeOverlay }

// MakeNodeOverlay returns a NodeOverlay with no requirements (it selects
// every instance type) and nothing to change.
func MakeNodeOverlay(name string) *NodeOverlayWrapper {
	return &NodeOverlayWrapper{karpv1alpha1.NodeOverlay{
		TypeMeta:   metav1.TypeMeta{APIVersion: karpv1alpha1.SchemeGroupVersion.String(), Kind: "NodeOverlay"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       karpv1alpha1.NodeOverlaySpec{Requirements: []karpv1alpha1.NodeSelectorRequirement{}},
	}}
}

// Obj returns a deep copy of the built NodeOverlay.
func (w *NodeOverlayWrapper) Obj() *karpv1alpha1.NodeOverlay { return w.NodeOverlay.DeepCopy() }

// Requirement appends a requirement.
func (w *NodeOverlayWrapper) Requirement(key string, op corev1.NodeSelectorOperator, values ...string) *NodeOverlayWrapper {
	w.Spec.Requirements = append(w.Spec.Requirements, karpv1alpha1.NodeSelectorRequirement{Key: key, Operator: op, Values: values})
	return w
}

// Price sets spec.price.
func (w *NodeOverlayWrapper) Price(price string) *NodeOverlayWrapper {
	w.Spec.Price = &price
	return w
}

// PriceAdjustment sets spec.priceAdjustment.
func (w *NodeOverlayWrapper) PriceAdjustment(adjustment string) *NodeOverlayWrapper {
	w.Spec.PriceAdjustment = &adjustment
	return w
}

// Capacity sets spec.capacity.
func (w *NodeOverlayWrapper) Capacity(capacity corev1.ResourceList) *NodeOverlayWrapper {
	w.Spec.Capacity = capacity
	return w
}

// Weight sets spec.weight.
func (w *NodeOverlayWrapper) Weight(weight int32) *NodeOverlayWrapper {
	w.Spec.Weight = &weight
	return w
}
