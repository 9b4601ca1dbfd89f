package disruption

import (
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// Reasons of a False-free Consolidatable condition. The condition is
// absent (cleared) whenever the node may not be consolidated yet.
const (
	// ReasonConsolidatable: consolidateAfter has elapsed.
	ReasonConsolidatable = "Consolidatable"
)

// consolidatable sets Consolidatable True once consolidation is enabled,
// the NodeClaim is Initialized and consolidateAfter has passed since its
// last pod event (or since it initialized, if no pod event was seen);
// until then the condition is absent and the result requeues for the
// exact moment it would flip.
func consolidatable(now time.Time, nodePool *karpv1.NodePool, nodeClaim *karpv1.NodeClaim, conditions karpv1.ConditionSet) reconcile.Result {
	after := nodePool.Spec.Disruption.ConsolidateAfter
	if after.IsNever() || !conditions.IsTrue(karpv1.ConditionTypeInitialized) {
		conditions.Clear(karpv1.ConditionTypeConsolidatable)
		return reconcile.Result{}
	}
	since := nodeClaim.Status.LastPodEventTime.Time
	if since.IsZero() {
		since = conditions.Get(karpv1.ConditionTypeInitialized).LastTransitionTime.Time
	}
	if at := since.Add(*after.Duration); now.Before(at) {
		conditions.Clear(karpv1.ConditionTypeConsolidatable)
		return requeueIn(at.Sub(now))
	}
	conditions.SetTrueWithReason(karpv1.ConditionTypeConsolidatable, ReasonConsolidatable,
		fmt.Sprintf("no pod event for consolidateAfter (%s)", after.String()))
	return reconcile.Result{}
}
