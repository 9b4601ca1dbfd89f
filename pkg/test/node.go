package test

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// NodeWrapper builds a Node: MakeNode("n").Allocatable("cpu", "4").Obj().
type NodeWrapper struct{ corev1.Node }

// MakeNode returns a Ready node labelled with its hostname and nothing
// allocatable.
func MakeNode(name string) *NodeWrapper {
	return &NodeWrapper{corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Capacity: corev1.ResourceList{}, Allocatable: corev1.ResourceList{}},
	}}
}

// Obj returns a deep copy of the built node.
func (w *NodeWrapper) Obj() *corev1.Node { return w.Node.DeepCopy() }

// Label sets one label.
func (w *NodeWrapper) Label(key, value string) *NodeWrapper {
	if w.ObjectMeta.Labels == nil {
		w.ObjectMeta.Labels = map[string]string{}
	}
	w.ObjectMeta.Labels[key] = value
	return w
}

// Labels replaces the labels (the hostname label included).
func (w *NodeWrapper) Labels(labels map[string]string) *NodeWrapper {
	w.ObjectMeta.Labels = labels
	return w
}

// Allocatable sets status.allocatable; capacity too when it was empty.
func (w *NodeWrapper) Allocatable(pairs ...string) *NodeWrapper {
	w.Status.Allocatable = ResourceList(pairs...)
	if len(w.Status.Capacity) == 0 {
		w.Status.Capacity = ResourceList(pairs...)
	}
	return w
}

// Capacity sets status.capacity.
func (w *NodeWrapper) Capacity(pairs ...string) *NodeWrapper {
	w.Status.Capacity = ResourceList(pairs...)
	return w
}

// Taint appends a taint.
func (w *NodeWrapper) Taint(t corev1.Taint) *NodeWrapper {
	w.Spec.Taints = append(w.Spec.Taints, t)
	return w
}

// Unschedulable cordons the node.
func (w *NodeWrapper) Unschedulable(v bool) *NodeWrapper { w.Spec.Unschedulable = v; return w }

// ProviderID sets spec.providerID.
func (w *NodeWrapper) ProviderID(id string) *NodeWrapper { w.Spec.ProviderID = id; return w }

// NotReady flips the Ready condition to False.
func (w *NodeWrapper) NotReady() *NodeWrapper {
	w.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}
	return w
}
