package scheduling

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// DefaultSchedulerName is the scheduler (profile) a pod with no
// spec.schedulerName is scheduled by.
const DefaultSchedulerName = corev1.DefaultSchedulerName

// AnyScheduler keys SpreadDefaults that apply whatever scheduler a pod
// names: upstream Karpenter's own --scheduler-config form has no profiles.
const AnyScheduler = "*"

// SpreadDefaults are the default topology spread constraints kube-scheduler's
// PodTopologySpread plugin gives pods that declare none, by the scheduler
// name of the profile that applies them (AnyScheduler for every pod). The
// constraints carry no labelSelector: it is deduced for each pod
// (DefaultSpreadSelector).
type SpreadDefaults map[string][]corev1.TopologySpreadConstraint

// For returns the default constraints of the profile that schedules pod,
// or nil when the pod declares its own constraints (kube-scheduler applies
// the defaults all or nothing) or no profile gives any.
func (d SpreadDefaults) For(pod *corev1.Pod) []corev1.TopologySpreadConstraint {
	if len(d) == 0 || len(pod.Spec.TopologySpreadConstraints) > 0 {
		return nil
	}
	name := pod.Spec.SchedulerName
	if name == "" {
		name = DefaultSchedulerName
	}
	if c, ok := d[name]; ok {
		return c
	}
	return d[AnyScheduler]
}

// DefaultSpreadSelector deduces the label selector of a pod's default
// constraints the way kube-scheduler does: the selectors of the Services
// in the pod's namespace that select it (a Service with no selector selects
// nothing), and the selector of its controller when that is a
// ReplicationController, ReplicaSet or StatefulSet (owner; nil otherwise).
// It returns nil when nothing can be deduced: kube-scheduler then applies
// no default to the pod (an empty selector would count every pod of the
// namespace).
//
// The Services' selectors become matchLabels; the owner's selector is
// ANDed to them as expressions, as kube-scheduler adds the owner's
// requirements to the Services' (both match the pod, so neither can
// contradict the other).
func DefaultSpreadSelector(pod *corev1.Pod, services []*corev1.Service, owner *metav1.LabelSelector) *metav1.LabelSelector {
	matchLabels := map[string]string{}
	for _, svc := range services {
		if svc.Namespace != pod.Namespace || svc.Spec.Selector == nil {
			continue
		}
		if labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
			maps.Copy(matchLabels, svc.Spec.Selector)
		}
	}
	var exprs []metav1.LabelSelectorRequirement
	if owner != nil {
		for _, k := range slices.Sorted(maps.Keys(owner.MatchLabels)) {
			exprs = append(exprs, metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn,
				Values: []string{owner.MatchLabels[k]}})
		}
		for _, e := range owner.MatchExpressions {
			exprs = append(exprs, *e.DeepCopy())
		}
	}
	if len(matchLabels) == 0 && len(exprs) == 0 {
		return nil
	}
	if len(matchLabels) == 0 {
		matchLabels = nil
	}
	return &metav1.LabelSelector{MatchLabels: matchLabels, MatchExpressions: exprs}
}

// DefaultSpreadConstraints are the constraints defaults give a pod whose
// selector was deduced: a copy of each with that selector. nil when the
// pod gets none (no defaults, or no selector).
func DefaultSpreadConstraints(defaults []corev1.TopologySpreadConstraint, selector *metav1.LabelSelector) []corev1.TopologySpreadConstraint {
	if len(defaults) == 0 || selector == nil {
		return nil
	}
	out := make([]corev1.TopologySpreadConstraint, len(defaults))
	for i := range defaults {
		out[i] = *defaults[i].DeepCopy()
		out[i].LabelSelector = selector.DeepCopy()
	}
	return out
}
