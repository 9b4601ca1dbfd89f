package nodepoolhealth

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// StoredStatus reads the NodePool's stored NodeRegistrationHealthy as a
// verdict, to Seed a tracker that has seen nothing since the process
// started. A condition of another NodePool generation is Unknown.
func StoredStatus(nodePool *karpv1.NodePool) Status {
	cond := nodePool.StatusConditions().Get(karpv1.ConditionTypeNodeRegistrationHealthy)
	switch {
	case cond == nil || cond.ObservedGeneration != nodePool.Generation:
		return StatusUnknown
	case cond.Status == metav1.ConditionTrue:
		return StatusHealthy
	case cond.Status == metav1.ConditionFalse:
		return StatusUnhealthy
	default:
		return StatusUnknown
	}
}
