package consistency

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// minShare is the share of each expected resource a Node must report: an
// instance short by more than 10% came up wrong (upstream's threshold).
const minShare = 0.90

// nodeShapeIssues compares an initialized, live NodeClaim's expected
// capacity with what its Node reports, for each resource the NodeClaim's
// pods requested.
func nodeShapeIssues(nodeClaim *karpv1.NodeClaim, node *corev1.Node) []string {
	if !nodeClaim.DeletionTimestamp.IsZero() || !nodeClaim.StatusConditions().IsTrue(karpv1.ConditionTypeInitialized) {
		return nil
	}
	var issues []string
	for _, name := range slices.Sorted(maps.Keys(nodeClaim.Spec.Resources.Requests)) {
		requested := nodeClaim.Spec.Resources.Requests[name]
		expected := nodeClaim.Status.Capacity[name]
		if requested.IsZero() || expected.IsZero() {
			continue
		}
		found := node.Status.Capacity[name]
		share := found.AsApproximateFloat64() / expected.AsApproximateFloat64()
		if share < minShare {
			issues = append(issues, fmt.Sprintf("expected %s of resource %s, but found %s (%0.1f%% of expected)",
				expected.String(), name, found.String(), share*100))
		}
	}
	return issues
}

// terminationIssues reports, for a deleting NodeClaim, the first
// PodDisruptionBudget that allows no disruption and covers a pod on its
// Node that the drain must evict.
func terminationIssues(nodeClaim *karpv1.NodeClaim, pods []corev1.Pod, pdbs []policyv1.PodDisruptionBudget) []string {
	if nodeClaim.DeletionTimestamp.IsZero() {
		return nil
	}
	for i := range pods {
		if !evictable(&pods[i]) {
			continue
		}
		if key, blocked := blockingPDB(&pods[i], pdbs); blocked {
			return []string{fmt.Sprintf("can't drain node, PDB %q is blocking evictions", key.String())}
		}
	}
	return nil
}

// evictable reports whether the drain evicts the pod: it is not finished,
// not already terminating, not a mirror pod (owned by its Node) and does
// not tolerate the disrupted taint.
func evictable(pod *corev1.Pod) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || pod.DeletionTimestamp != nil {
		return false
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return false
	}
	for _, ref := range pod.OwnerReferences {
		if ref.Kind == "Node" {
			return false
		}
	}
	for i := range pod.Spec.Tolerations {
		if pod.Spec.Tolerations[i].ToleratesTaint(klog.Background(), &karpv1.DisruptedNoScheduleTaint, false) {
			return false
		}
	}
	return true
}

// blockingPDB returns a PodDisruptionBudget of the pod's namespace that
// selects it and allows no disruption. A budget that always lets unhealthy
// pods go does not hold back a pod that is not ready.
func blockingPDB(pod *corev1.Pod, pdbs []policyv1.PodDisruptionBudget) (types.NamespacedName, bool) {
	for i := range pdbs {
		pdb := &pdbs[i]
		if pdb.Namespace != pod.Namespace || pdb.Spec.Selector == nil {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !selector.Matches(labels.Set(pod.Labels)) {
			continue
		}
		alwaysAllow := pdb.Spec.UnhealthyPodEvictionPolicy != nil && *pdb.Spec.UnhealthyPodEvictionPolicy == policyv1.AlwaysAllow
		if alwaysAllow && notReady(pod) {
			continue
		}
		if pdb.Status.DisruptionsAllowed == 0 {
			return types.NamespacedName{Namespace: pdb.Namespace, Name: pdb.Name}, true
		}
	}
	return types.NamespacedName{}, false
}

func notReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionFalse
		}
	}
	return false
}
