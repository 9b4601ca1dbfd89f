package termination

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// stuckTerminatingAfter is how long past its deletion timestamp a pod is
// considered stuck (its kubelet gone) and no longer waited for. The API
// server sets the deletion timestamp to the end of the pod's grace period,
// so a pod running a long preStop hook is waited for its whole grace
// period plus this.
const stuckTerminatingAfter = time.Minute

// Drain groups, in eviction order. Only the first non-empty group is
// evicted in a pass, so workloads leave before the DaemonSets that serve
// them, and critical pods leave last.
const (
	groupWorkload = iota
	groupDaemonSet
	groupCriticalWorkload
	groupCriticalDaemonSet
	groupCount
)

// criticalPriorityClasses are the priority classes whose pods go last.
var criticalPriorityClasses = map[string]bool{
	"system-cluster-critical": true,
	"system-node-critical":    true,
}

// drainPlan is what one drain pass decides for a node's pods.
type drainPlan struct {
	// waiting are the pods the drain still waits for (not yet gone).
	waiting []*corev1.Pod
	// evict are the pods to evict now: those of the first group that
	// still has pods on the node, unless already terminating or protected.
	evict []*corev1.Pod
	// forceDelete are pods whose grace period no longer fits before the
	// node's termination deadline.
	forceDelete []*corev1.Pod
	// blocked are pods karp may not evict (do-not-disrupt) before the deadline.
	blocked []*corev1.Pod
	// nextForce is the earliest future time a pod must be force-deleted
	// (zero when none).
	nextForce time.Time
}

// planDrain decides what to do with a node's pods at now. deadline is the
// node's termination deadline (zero when the NodeClaim has no
// terminationGracePeriod).
//
// A group counts as present while any of its pods is still on the node,
// terminating or protected ones included, so DaemonSet pods keep serving
// workload pods until those are really gone. Pods out of time are deleted
// whatever their group.
func planDrain(pods []corev1.Pod, deadline, now time.Time) drainPlan {
	var plan drainPlan
	var groups [groupCount][]*corev1.Pod
	for i := range pods {
		pod := &pods[i]
		if !isWaitingEviction(pod, now) {
			continue
		}
		plan.waiting = append(plan.waiting, pod)
		if !deadline.IsZero() {
			at := forceDeleteAt(pod, deadline)
			if !now.Before(at) {
				plan.forceDelete = append(plan.forceDelete, pod)
				continue
			}
			if plan.nextForce.IsZero() || at.Before(plan.nextForce) {
				plan.nextForce = at
			}
		}
		if pod.DeletionTimestamp == nil && scheduling.DoNotDisruptActive(pod, now) {
			plan.blocked = append(plan.blocked, pod)
		}
		g := drainGroup(pod)
		groups[g] = append(groups[g], pod)
	}
	for g := range groups {
		if len(groups[g]) == 0 {
			continue
		}
		for _, pod := range groups[g] {
			if pod.DeletionTimestamp == nil && !scheduling.DoNotDisruptActive(pod, now) {
				plan.evict = append(plan.evict, pod)
			}
		}
		break
	}
	return plan
}

// forceDeleteAt is when pod must be deleted so that its own grace period
// ends by the node's deadline.
func forceDeleteAt(pod *corev1.Pod, deadline time.Time) time.Time {
	return deadline.Add(-podGracePeriod(pod))
}

func podGracePeriod(pod *corev1.Pod) time.Duration {
	if pod.Spec.TerminationGracePeriodSeconds == nil {
		return corev1.DefaultTerminationGracePeriodSeconds * time.Second
	}
	return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
}

// isWaitingEviction reports whether the drain must see pod gone: it is not
// finished, does not tolerate the disrupted taint, is not a mirror pod and
// is not stuck terminating.
func isWaitingEviction(pod *corev1.Pod, now time.Time) bool {
	switch {
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return false
	case isMirror(pod):
		return false
	case toleratesDisruptedTaint(pod):
		return false
	case pod.DeletionTimestamp != nil && now.Sub(pod.DeletionTimestamp.Time) > stuckTerminatingAfter:
		return false
	}
	return true
}

func isMirror(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[corev1.MirrorPodAnnotationKey]
	return ok
}

func toleratesDisruptedTaint(pod *corev1.Pod) bool {
	for i := range pod.Spec.Tolerations {
		if pod.Spec.Tolerations[i].ToleratesTaint(klog.Background(), &karpv1.DisruptedNoScheduleTaint, false) {
			return true
		}
	}
	return false
}

func isDaemonSetPod(pod *corev1.Pod) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.Kind == "DaemonSet" && ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

func drainGroup(pod *corev1.Pod) int {
	critical := criticalPriorityClasses[pod.Spec.PriorityClassName]
	daemon := isDaemonSetPod(pod)
	switch {
	case critical && daemon:
		return groupCriticalDaemonSet
	case critical:
		return groupCriticalWorkload
	case daemon:
		return groupDaemonSet
	default:
		return groupWorkload
	}
}
