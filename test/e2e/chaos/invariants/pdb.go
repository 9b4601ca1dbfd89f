package invariants

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// pdbSelects reports whether the budget selects the pod. As the Eviction
// API, a nil or empty selector selects nothing.
func pdbSelects(pdb *policyv1.PodDisruptionBudget, pod *corev1.Pod) bool {
	if pdb.Namespace != pod.Namespace || pdb.Spec.Selector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || sel.Empty() {
		return false
	}
	return sel.Matches(labels.Set(pod.Labels))
}

// desiredHealthy is how many of the budget's pods must stay healthy. The
// disruption controller's own figure (status.desiredHealthy) wins once it
// has observed the budget's current generation: it knows the owning
// controllers' scale. Before that the figure is derived from the spec,
// with expected the number of the budget's pods that exist.
func desiredHealthy(pdb *policyv1.PodDisruptionBudget, expected int) int {
	if pdb.Generation > 0 && pdb.Status.ObservedGeneration >= pdb.Generation {
		return int(pdb.Status.DesiredHealthy)
	}
	switch {
	case pdb.Spec.MinAvailable != nil:
		return scaled(*pdb.Spec.MinAvailable, expected)
	case pdb.Spec.MaxUnavailable != nil:
		return max(0, expected-scaled(*pdb.Spec.MaxUnavailable, expected))
	default:
		// Neither set: the API server defaults minAvailable to 1.
		return 1
	}
}

// scaled resolves an int-or-percent against total, rounding a percentage
// up as the disruption controller does.
func scaled(v intstr.IntOrString, total int) int {
	if v.Type == intstr.Int {
		return v.IntValue()
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, total, true)
	if err != nil {
		return math.MaxInt32 // a malformed budget protects everything
	}
	return n
}

// healthy reports whether a pod counts towards a budget's healthy pods:
// Running, Ready and not terminating, as the disruption controller counts.
func healthy(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// terminal reports whether the pod has finished.
func terminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}
