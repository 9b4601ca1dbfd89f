package state

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// IsProvisionable reports whether karp should find a node for the pod, by
// upstream's rule: the kube-scheduler marked it PodScheduled=False with
// reason Unschedulable, it is not bound, the scheduler has not nominated a
// node for it (preemption), it is not terminating, and it is neither a
// DaemonSet pod nor a mirror pod (owned by a Node): those follow their node.
//
// A nominated node karp wrote itself, as a scheduler hint (see
// SchedulerHintCondition), is no preemption and does not count.
func IsProvisionable(pod *corev1.Pod) bool {
	return pod.Spec.NodeName == "" &&
		(pod.Status.NominatedNodeName == "" || IsSchedulerHint(pod)) &&
		pod.DeletionTimestamp == nil &&
		!isTerminal(pod) &&
		failedToSchedule(pod) &&
		!IsOwnedBy(pod, "DaemonSet") &&
		!IsOwnedBy(pod, "Node")
}

// IsAwaitingScheduler reports whether the pod is pending and the
// kube-scheduler has not tried to place it yet: no PodScheduled condition,
// no scheduling gates, and the default scheduler's to place. In a burst
// of new pods the scheduler takes seconds to work through its queue (it
// fails pods one by one when nothing fits), so karp does not wait for
// each failure: it plans new nodes for these pods at once. Unlike
// provisionable pods they are never nominated to capacity that exists
// and get no FailedScheduling event from karp; the scheduler places them
// there itself, or fails them, which makes them provisionable.
func IsAwaitingScheduler(pod *corev1.Pod) bool {
	return pod.Spec.NodeName == "" &&
		pod.Status.NominatedNodeName == "" &&
		pod.DeletionTimestamp == nil &&
		!isTerminal(pod) &&
		(pod.Spec.SchedulerName == "" || pod.Spec.SchedulerName == corev1.DefaultSchedulerName) &&
		len(pod.Spec.SchedulingGates) == 0 &&
		!slices.ContainsFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodScheduled }) &&
		!IsOwnedBy(pod, "DaemonSet") &&
		!IsOwnedBy(pod, "Node")
}

func failedToSchedule(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// IsOwnedBy reports whether an owner reference of the pod has the kind.
func IsOwnedBy(pod *corev1.Pod, kind string) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.Kind == kind {
			return true
		}
	}
	return false
}

// IsReschedulable reports whether a pod of a node being deleted must be
// placed elsewhere: not terminal, not terminating, not a DaemonSet or
// mirror pod.
func IsReschedulable(pod *corev1.Pod) bool {
	return !isTerminal(pod) && pod.DeletionTimestamp == nil &&
		!IsOwnedBy(pod, "DaemonSet") && !IsOwnedBy(pod, "Node")
}

// ProvisionablePods returns the provisionable pods, and the pods awaiting
// the scheduler, that have no unexpired nomination, in namespace/name
// order. The pods are shared (see the package documentation): callers must not modify
// them.
func (c *Cluster) ProvisionablePods() []*corev1.Pod {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*corev1.Pod
	for key, pod := range c.pods {
		if pod.Spec.NodeName != "" || !(IsProvisionable(pod) || IsAwaitingScheduler(pod)) || c.activeNomination(key) != "" {
			continue
		}
		out = append(out, pod)
	}
	slices.SortFunc(out, byNamespacedName)
	return out
}

// PodCount returns how many non-terminal pods the view holds and how many
// of them are bound.
func (c *Cluster) PodCount() (total, bound int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, byNode := range c.podsByNode {
		bound += len(byNode)
	}
	return len(c.pods), bound
}

// IsNominated reports whether the pod has an unexpired nomination.
func (c *Cluster) IsNominated(pod *corev1.Pod) bool {
	return c.NominatedNode(client.ObjectKeyFromObject(pod)) != ""
}

// SchedulerHintCondition is the pod condition karp sets beside the
// status.nominatedNodeName it writes as a hint to the kube-scheduler. It
// tells karp's hint (which must not stop karp from placing the pod again
// should that node never come) from a nomination the scheduler made for
// preemption (which must), across controller restarts.
const SchedulerHintCondition corev1.PodConditionType = "karp.sh/SchedulerHint"

// SchedulerHintMessage is the hint condition's message for a node.
func SchedulerHintMessage(nodeName string) string {
	return "karp launched or chose node " + nodeName + " for this pod"
}

// IsSchedulerHint reports whether the pod's nominated node is the hint
// karp wrote, not a nomination of the scheduler's.
func IsSchedulerHint(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == SchedulerHintCondition {
			return c.Status == corev1.ConditionTrue && c.Message == SchedulerHintMessage(pod.Status.NominatedNodeName)
		}
	}
	return false
}
