package health

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/karp-autoscaler/karp/pkg/metrics"
)

// conditionLabel is the Node condition type that triggered repair;
// imageIDLabel the image the NodeClaim's instance runs.
const (
	conditionLabel = "condition"
	imageIDLabel   = "image_id"
)

// UnhealthyDisruptedTotal counts NodeClaims deleted by node repair.
var UnhealthyDisruptedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: metrics.Namespace, Subsystem: metrics.NodeClaimSubsystem, Name: "unhealthy_disrupted_total",
	Help: "Number of unhealthy nodeclaims disrupted in total by Karpenter. Labeled by condition on the node was disrupted, the owning nodepool, capacity type and image ID.",
}, []string{conditionLabel, metrics.NodePoolLabel, metrics.CapacityTypeLabel, imageIDLabel})
