package interruption

import (
	"math"
	"time"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// LaunchSlack is added to twice the observed launch time in a lead: the
// disruption loop's poll and the replacement's scheduling.
const LaunchSlack = 10 * time.Second

// NoLeadCeiling is the ceiling of a LaunchLead with no upper bound.
const NoLeadCeiling = time.Duration(math.MaxInt64)

// LaunchTime is how long the NodeClaim took from creation to Initialized,
// and false while it is not initialized.
func LaunchTime(nodeClaim *karpv1.NodeClaim) (time.Duration, bool) {
	init := nodeClaim.StatusConditions().Get(karpv1.ConditionTypeInitialized)
	if init == nil || !nodeClaim.StatusConditions().IsTrue(karpv1.ConditionTypeInitialized) {
		return 0, false
	}
	return init.LastTransitionTime.Sub(nodeClaim.CreationTimestamp.Time), true
}

// LaunchLead is how long before a deadline a node's replacement is
// launched so that it is initialized in time: twice launch (the longest
// LaunchTime among the pool's current NodeClaims, zero when none is
// initialized), plus slack for polls and scheduling, at least floor and
// at most ceiling (NoLeadCeiling for none). Expiry, interruption notices
// and repairs all take their lead from it.
func LaunchLead(launch, slack, floor, ceiling time.Duration) time.Duration {
	return min(max(2*launch+slack, floor), ceiling)
}
