package disruption

import (
	"time"

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
	last := nc.Status.LastPodEventTime.Time
	if init := nc.StatusConditions().Get(karpv1.ConditionTypeInitialized); init != nil && init.LastTransitionTime.After(last) {
		last = init.LastTransitionTime.Time
	}
	for _, pod := range c.StateNode.Pods {
		if pod.Status.StartTime != nil && pod.Status.StartTime.After(last) {
			last = pod.Status.StartTime.Time
		}
	}
	if now.Before(last.Add(*after)) {
		return false, notYet
	}
	return true, blocker{}
}
