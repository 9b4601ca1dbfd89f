package test

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// NodePoolWrapper builds a NodePool: MakeNodePool("a").Weight(10).Obj().
// Every setter replaces the field it names (nothing is merged), so a test
// can set any field to its zero value.
type NodePoolWrapper struct{ karpv1.NodePool }

// MakeNodePool returns a NodePool with the values the API server would
// default (expireAfter 720h, consolidateAfter 0s, WhenEmptyOrUnderutilized,
// one 10% budget), no requirements and a nodeClassRef to the
// KWOKNodeClass "default". Go clients do not see server defaults for
// NillableDuration fields, so the builder sets them to match.
func MakeNodePool(name string) *NodePoolWrapper {
	return &NodePoolWrapper{karpv1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: karpv1.SchemeGroupVersion.String(), Kind: "NodePool"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{
				Spec: karpv1.NodeClaimTemplateSpec{
					Requirements: []karpv1.NodeSelectorRequirementWithMinValues{},
					NodeClassRef: kwokv1alpha1.NodeClassReference("default"),
					ExpireAfter:  karpv1.NewNillableDuration(720 * time.Hour),
				},
			},
			Disruption: karpv1.Disruption{
				ConsolidateAfter:    karpv1.NewNillableDuration(0),
				ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized,
				Budgets:             []karpv1.Budget{{Nodes: "10%"}},
			},
		},
	}}
}

// Obj returns a deep copy of the built NodePool.
func (w *NodePoolWrapper) Obj() *karpv1.NodePool { return w.NodePool.DeepCopy() }

// ObjectLabels sets the NodePool object's own labels.
func (w *NodePoolWrapper) ObjectLabels(labels map[string]string) *NodePoolWrapper {
	w.ObjectMeta.Labels = labels
	return w
}

// Labels sets the template labels put on every NodeClaim and Node.
func (w *NodePoolWrapper) Labels(labels map[string]string) *NodePoolWrapper {
	w.Spec.Template.ObjectMeta.Labels = labels
	return w
}

// Annotations sets the template annotations put on every NodeClaim and Node.
func (w *NodePoolWrapper) Annotations(annotations map[string]string) *NodePoolWrapper {
	w.Spec.Template.ObjectMeta.Annotations = annotations
	return w
}

// Requirement appends a requirement without minValues.
func (w *NodePoolWrapper) Requirement(key string, op corev1.NodeSelectorOperator, values ...string) *NodePoolWrapper {
	w.Spec.Template.Spec.Requirements = append(w.Spec.Template.Spec.Requirements,
		karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values})
	return w
}

// RequirementWithMinValues appends a requirement with minValues.
func (w *NodePoolWrapper) RequirementWithMinValues(key string, op corev1.NodeSelectorOperator, minValues int, values ...string) *NodePoolWrapper {
	w.Spec.Template.Spec.Requirements = append(w.Spec.Template.Spec.Requirements,
		karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values, MinValues: &minValues})
	return w
}

// Requirements replaces all requirements (nil included).
func (w *NodePoolWrapper) Requirements(reqs ...karpv1.NodeSelectorRequirementWithMinValues) *NodePoolWrapper {
	w.Spec.Template.Spec.Requirements = reqs
	return w
}

// Taint appends a taint.
func (w *NodePoolWrapper) Taint(t corev1.Taint) *NodePoolWrapper {
	w.Spec.Template.Spec.Taints = append(w.Spec.Template.Spec.Taints, t)
	return w
}

// StartupTaint appends a startup taint.
func (w *NodePoolWrapper) StartupTaint(t corev1.Taint) *NodePoolWrapper {
	w.Spec.Template.Spec.StartupTaints = append(w.Spec.Template.Spec.StartupTaints, t)
	return w
}

// NodeClassRef sets the nodeClassRef (nil included).
func (w *NodePoolWrapper) NodeClassRef(ref *karpv1.NodeClassReference) *NodePoolWrapper {
	w.Spec.Template.Spec.NodeClassRef = ref
	return w
}

// ExpireAfter sets expireAfter; use karpv1.NillableDuration{} for Never.
func (w *NodePoolWrapper) ExpireAfter(d karpv1.NillableDuration) *NodePoolWrapper {
	w.Spec.Template.Spec.ExpireAfter = d
	return w
}

// TerminationGracePeriod sets terminationGracePeriod.
func (w *NodePoolWrapper) TerminationGracePeriod(d time.Duration) *NodePoolWrapper {
	w.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: d}
	return w
}

// ConsolidateAfter sets consolidateAfter; use karpv1.NillableDuration{} for Never.
func (w *NodePoolWrapper) ConsolidateAfter(d karpv1.NillableDuration) *NodePoolWrapper {
	w.Spec.Disruption.ConsolidateAfter = d
	return w
}

// ConsolidationPolicy sets the consolidation policy.
func (w *NodePoolWrapper) ConsolidationPolicy(p karpv1.ConsolidationPolicy) *NodePoolWrapper {
	w.Spec.Disruption.ConsolidationPolicy = p
	return w
}

// Budgets replaces the disruption budgets (none included).
func (w *NodePoolWrapper) Budgets(budgets ...karpv1.Budget) *NodePoolWrapper {
	w.Spec.Disruption.Budgets = budgets
	return w
}

// Limits replaces the limits.
func (w *NodePoolWrapper) Limits(limits corev1.ResourceList) *NodePoolWrapper {
	w.Spec.Limits = karpv1.Limits(limits)
	return w
}

// Weight sets the weight.
func (w *NodePoolWrapper) Weight(weight int32) *NodePoolWrapper {
	w.Spec.Weight = &weight
	return w
}

// Replicas makes the pool static with n nodes.
func (w *NodePoolWrapper) Replicas(n int64) *NodePoolWrapper {
	w.Spec.Replicas = &n
	return w
}

// StatusResources sets status.resources.
func (w *NodePoolWrapper) StatusResources(resources corev1.ResourceList) *NodePoolWrapper {
	w.Status.Resources = resources
	return w
}

// Condition sets a status condition through the NodePool's ConditionSet
// (keeping Ready consistent), stamped at the given time.
func (w *NodePoolWrapper) Condition(conditionType string, status metav1.ConditionStatus, reason string, at time.Time) *NodePoolWrapper {
	setCondition(w.StatusConditions(), conditionType, status, reason, at)
	return w
}
