package disruption

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// consolidatable reports whether consolidateAfter has elapsed for the
// candidate, and otherwise why not. The Consolidatable condition, when
// set, decides; without it the time is computed here from the last pod
// event (LastPodEventTime, else the latest pod start) or initialization.
func consolidatable(c *Candidate, now time.Time) (bool, blocker) {
	after := c.NodePool.Spec.Disruption.ConsolidateAfter.Duration
	if after == nil {
		return false, blocker{BlockedDisabled, "consolidation is disabled (consolidateAfter: Never)"}
	}
	nc := c.NodeClaim()
	notYet := blocker{BlockedConsolidateAfter, "consolidateAfter (" + after.String() + ") has not elapsed since the last pod event"}
	if cond := nc.StatusConditions().Get(karpv1.ConditionTypeConsolidatable); cond != nil {
		if cond.Status != "True" {
			return false, notYet
		}
		return true, blocker{}
	}
	last := LastActivity(nc, c.StateNode.Pods)
	if now.Before(last.Add(*after)) {
		return false, notYet
	}
	return true, blocker{}
}

// LastActivity is when consolidateAfter starts counting for a node
// without a Consolidatable condition: the latest of its NodeClaim's last
// pod event, its initialization and the start of any pod on it.
func LastActivity(nc *karpv1.NodeClaim, pods []*corev1.Pod) time.Time {
	last := nc.Status.LastPodEventTime.Time
	if init := nc.StatusConditions().Get(karpv1.ConditionTypeInitialized); init != nil && init.LastTransitionTime.After(last) {
		last = init.LastTransitionTime.Time
	}
	for _, pod := range pods {
		if pod.Status.StartTime != nil && pod.Status.StartTime.After(last) {
			last = pod.Status.StartTime.Time
		}
	}
	return last
}
