package framework

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// DaemonOnEachAndFits reports whether every node runs a Running pod
// labelled app=daemon and the requests of the pods bound to it (finished
// ones aside) fit within its allocatable; the message names the first
// node that does not.
func DaemonOnEachAndFits(nodes []corev1.Node, pods []corev1.Pod, daemon string) (bool, string) {
	runsDaemon := map[string]bool{}
	requested := map[string]corev1.ResourceList{}
	for i := range pods {
		pod := &pods[i]
		if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if pod.Labels["app"] == daemon && PodRunning(pod) {
			runsDaemon[pod.Spec.NodeName] = true
		}
		sum := requested[pod.Spec.NodeName]
		if sum == nil {
			sum = corev1.ResourceList{}
		}
		for name, q := range resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}) {
			total := sum[name]
			total.Add(q)
			sum[name] = total
		}
		requested[pod.Spec.NodeName] = sum
	}
	for _, node := range nodes {
		if !runsDaemon[node.Name] {
			return false, fmt.Sprintf("node %s (%s, taints %v) runs no %s pod", node.Name, node.Labels[karpv1.NodePoolLabelKey], node.Spec.Taints, daemon)
		}
		for name, q := range requested[node.Name] {
			if alloc, ok := node.Status.Allocatable[name]; ok && q.Cmp(alloc) > 0 {
				return false, fmt.Sprintf("node %s: pods request %s %s, allocatable %s", node.Name, q.String(), name, alloc.String())
			}
		}
	}
	return true, ""
}
