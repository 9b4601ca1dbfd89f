package test

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// NodeClaimWrapper builds a NodeClaim: MakeNodeClaim("a").NodePool("p").Obj().
// Every setter replaces the field it names (nothing is merged).
type NodeClaimWrapper struct{ karpv1.NodeClaim }

// MakeNodeClaim returns a NodeClaim with expireAfter 720h (the server
// default), no requirements and a nodeClassRef to the KWOKNodeClass "default".
func MakeNodeClaim(name string) *NodeClaimWrapper {
	return &NodeClaimWrapper{karpv1.NodeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: karpv1.SchemeGroupVersion.String(), Kind: "NodeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{},
			NodeClassRef: kwokv1alpha1.NodeClassReference("default"),
			ExpireAfter:  karpv1.NewNillableDuration(720 * time.Hour),
		},
	}}
}

// Obj returns a deep copy of the built NodeClaim.
func (w *NodeClaimWrapper) Obj() *karpv1.NodeClaim { return w.NodeClaim.DeepCopy() }

// NodePool labels the claim as belonging to the named NodePool.
func (w *NodeClaimWrapper) NodePool(name string) *NodeClaimWrapper {
	return w.Label(karpv1.NodePoolLabelKey, name)
}

// Labels replaces the object labels.
func (w *NodeClaimWrapper) Labels(labels map[string]string) *NodeClaimWrapper {
	w.ObjectMeta.Labels = labels
	return w
}

// Label sets one object label.
func (w *NodeClaimWrapper) Label(key, value string) *NodeClaimWrapper {
	if w.ObjectMeta.Labels == nil {
		w.ObjectMeta.Labels = map[string]string{}
	}
	w.ObjectMeta.Labels[key] = value
	return w
}

// Annotations replaces the object annotations.
func (w *NodeClaimWrapper) Annotations(annotations map[string]string) *NodeClaimWrapper {
	w.ObjectMeta.Annotations = annotations
	return w
}

// Finalizers replaces the finalizers.
func (w *NodeClaimWrapper) Finalizers(finalizers ...string) *NodeClaimWrapper {
	w.ObjectMeta.Finalizers = finalizers
	return w
}

// Requirement appends a requirement without minValues.
func (w *NodeClaimWrapper) Requirement(key string, op corev1.NodeSelectorOperator, values ...string) *NodeClaimWrapper {
	w.Spec.Requirements = append(w.Spec.Requirements,
		karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values})
	return w
}

// RequirementWithMinValues appends a requirement with minValues.
func (w *NodeClaimWrapper) RequirementWithMinValues(key string, op corev1.NodeSelectorOperator, minValues int, values ...string) *NodeClaimWrapper {
	w.Spec.Requirements = append(w.Spec.Requirements,
		karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values, MinValues: &minValues})
	return w
}

// Requirements replaces all requirements (nil included).
func (w *NodeClaimWrapper) Requirements(reqs ...karpv1.NodeSelectorRequirementWithMinValues) *NodeClaimWrapper {
	w.Spec.Requirements = reqs
	return w
}

// Requests replaces spec.resources.requests.
func (w *NodeClaimWrapper) Requests(requests corev1.ResourceList) *NodeClaimWrapper {
	w.Spec.Resources.Requests = requests
	return w
}

// Taint appends a taint.
func (w *NodeClaimWrapper) Taint(t corev1.Taint) *NodeClaimWrapper {
	w.Spec.Taints = append(w.Spec.Taints, t)
	return w
}

// StartupTaint appends a startup taint.
func (w *NodeClaimWrapper) StartupTaint(t corev1.Taint) *NodeClaimWrapper {
	w.Spec.StartupTaints = append(w.Spec.StartupTaints, t)
	return w
}

// NodeClassRef sets the nodeClassRef (nil included).
func (w *NodeClaimWrapper) NodeClassRef(ref *karpv1.NodeClassReference) *NodeClaimWrapper {
	w.Spec.NodeClassRef = ref
	return w
}

// ExpireAfter sets expireAfter; use karpv1.NillableDuration{} for Never.
func (w *NodeClaimWrapper) ExpireAfter(d karpv1.NillableDuration) *NodeClaimWrapper {
	w.Spec.ExpireAfter = d
	return w
}

// TerminationGracePeriod sets terminationGracePeriod.
func (w *NodeClaimWrapper) TerminationGracePeriod(d time.Duration) *NodeClaimWrapper {
	w.Spec.TerminationGracePeriod = &metav1.Duration{Duration: d}
	return w
}

// ProviderID sets status.providerID.
func (w *NodeClaimWrapper) ProviderID(id string) *NodeClaimWrapper {
	w.Status.ProviderID = id
	return w
}

// NodeName sets status.nodeName.
func (w *NodeClaimWrapper) NodeName(name string) *NodeClaimWrapper {
	w.Status.NodeName = name
	return w
}

// ImageID sets status.imageID.
func (w *NodeClaimWrapper) ImageID(id string) *NodeClaimWrapper {
	w.Status.ImageID = id
	return w
}

// Capacity replaces status.capacity.
func (w *NodeClaimWrapper) Capacity(capacity corev1.ResourceList) *NodeClaimWrapper {
	w.Status.Capacity = capacity
	return w
}

// Allocatable replaces status.allocatable.
func (w *NodeClaimWrapper) Allocatable(allocatable corev1.ResourceList) *NodeClaimWrapper {
	w.Status.Allocatable = allocatable
	return w
}

// LastPodEventTime sets status.lastPodEventTime.
func (w *NodeClaimWrapper) LastPodEventTime(t time.Time) *NodeClaimWrapper {
	w.Status.LastPodEventTime = metav1.NewTime(t)
	return w
}

// Condition sets a status condition through the NodeClaim's ConditionSet
// (keeping Ready consistent), stamped at the given time.
func (w *NodeClaimWrapper) Condition(conditionType string, status metav1.ConditionStatus, reason string, at time.Time) *NodeClaimWrapper {
	setCondition(w.StatusConditions(), conditionType, status, reason, at)
	return w
}

// setCondition writes one condition at a fixed time.
func setCondition(set karpv1.ConditionSet, conditionType string, status metav1.ConditionStatus, reason string, at time.Time) {
	set = set.WithClock(clocktesting.NewFakePassiveClock(at))
	switch status {
	case metav1.ConditionTrue:
		set.SetTrueWithReason(conditionType, reason, "")
	case metav1.ConditionFalse:
		set.SetFalse(conditionType, reason, "")
	default:
		set.SetUnknownWithReason(conditionType, reason, "")
	}
}
