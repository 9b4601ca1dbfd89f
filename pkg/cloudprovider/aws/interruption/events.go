package interruption

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/interruption"
)

// Event reasons published on the NodeClaim and its Node (upstream's).
const (
	ReasonSpotInterrupted                        = interruption.ReasonSpotInterrupted
	ReasonSpotRebalanceRecommendation            = "SpotRebalanceRecommendation"
	ReasonInstanceStopping                       = "InstanceStopping"
	ReasonInstanceTerminating                    = "InstanceTerminating"
	ReasonInstanceUnhealthy                      = "InstanceUnhealthy"
	ReasonCapacityReservationInstanceInterrupted = "CapacityReservationInstanceInterrupted"
	ReasonTerminatingOnInterruption              = interruption.ReasonTerminatingOnInterruption
)

// notice is the event a message kind publishes.
type notice struct {
	eventType, reason, message string
}

// notices lists the event of each kind that is acted on.
var notices = map[Kind]notice{
	KindSpotInterrupted:                {corev1.EventTypeWarning, ReasonSpotInterrupted, "Spot interruption warning was triggered"},
	KindRebalanceRecommendation:        {corev1.EventTypeNormal, ReasonSpotRebalanceRecommendation, "Spot rebalance recommendation was triggered"},
	KindScheduledChange:                {corev1.EventTypeWarning, ReasonInstanceUnhealthy, "An unhealthy warning was triggered for the instance"},
	KindInstanceStatus:                 {corev1.EventTypeWarning, ReasonInstanceUnhealthy, "An unhealthy warning was triggered for the instance"},
	KindSystemStatus:                   {corev1.EventTypeWarning, ReasonInstanceUnhealthy, "An unhealthy warning was triggered for the instance"},
	KindEventStatus:                    {corev1.EventTypeWarning, ReasonInstanceUnhealthy, "An unhealthy warning was triggered for the instance"},
	KindInstanceStopped:                {corev1.EventTypeWarning, ReasonInstanceStopping, "Instance is stopping"},
	KindInstanceTerminated:             {corev1.EventTypeWarning, ReasonInstanceTerminating, "Instance is terminating"},
	KindCapacityReservationInterrupted: {corev1.EventTypeWarning, ReasonCapacityReservationInstanceInterrupted, "Capacity reservation instance interruption warning was triggered"},
}
