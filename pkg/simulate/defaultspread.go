package simulate

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karp-autoscaler/karp/pkg/manifest"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// defaultSpread gives the pending pods the scheduler's default topology
// spread constraints (--scheduler-config), their selector deduced from
// their owner among the manifests as kube-scheduler deduces it: a
// ReplicaSet's or StatefulSet's selector; for the pods of a Deployment
// expanded here, the selector its ReplicaSet would have (the Deployment's
// plus the pod-template-hash), joined by the selectors of the Services
// among the manifests that select the pod.
func defaultSpread(set *manifest.Set, pods []*corev1.Pod, defaults scheduling.SpreadDefaults) map[types.UID][]corev1.TopologySpreadConstraint {
	if len(defaults) == 0 {
		return nil
	}
	out := map[types.UID][]corev1.TopologySpreadConstraint{}
	for _, pod := range pods {
		constraints := defaults.For(pod)
		if len(constraints) == 0 {
			continue
		}
		selector := scheduling.DefaultSpreadSelector(pod, set.Services, ownerSelector(set, pod))
		if tscs := scheduling.DefaultSpreadConstraints(constraints, selector); tscs != nil {
			out[pod.UID] = tscs
		}
	}
	return out
}

func ownerSelector(set *manifest.Set, pod *corev1.Pod) *metav1.LabelSelector {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.APIVersion != appsv1.SchemeGroupVersion.String() {
		return nil
	}
	switch ref.Kind {
	case "StatefulSet":
		for _, sts := range set.StatefulSets {
			if sts.Namespace == pod.Namespace && sts.Name == ref.Name {
				return sts.Spec.Selector
			}
		}
	case "ReplicaSet":
		for _, rs := range set.ReplicaSets {
			if rs.Namespace == pod.Namespace && rs.Name == ref.Name {
				return rs.Spec.Selector
			}
		}
		hash := pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		for _, d := range set.Deployments {
			if d.Namespace == pod.Namespace && d.Name+"-"+hash == ref.Name && d.Spec.Selector != nil {
				sel := d.Spec.Selector.DeepCopy()
				sel.MatchLabels = maps.Clone(sel.MatchLabels)
				if sel.MatchLabels == nil {
					sel.MatchLabels = map[string]string{}
				}
				sel.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
				return sel
			}
		}
	}
	return nil
}
