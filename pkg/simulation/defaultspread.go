package simulation

import corev1 "k8s.io/api/core/v1"

// withDefaultSpread returns the pod as the solver sees it when it declares
// no topology spread constraints and the scheduler's defaults give it
// some: a copy carrying them, so its class, relaxation ladder and topology
// groups treat them as its own (ScheduleAnyway ones are preferences under
// the preference policy, like a pod's own). The pod itself is untouched.
func withDefaultSpread(pod *corev1.Pod, defaults []corev1.TopologySpreadConstraint) *corev1.Pod {
	if len(defaults) == 0 || len(pod.Spec.TopologySpreadConstraints) > 0 {
		return pod
	}
	cp := *pod
	cp.Spec.TopologySpreadConstraints = defaults
	return &cp
}
