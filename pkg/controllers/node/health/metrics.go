package health

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/karp-autoscaler/karp/pkg/metrics"
)

// conditionLabel is the Node condition type that triggered repair.
const conditionLabel = "condition"

// UnhealthyDisruptedTotal counts NodeClaims deleted by node repair.
var UnhealthyDisruptedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: metrics.Namespace, Subsystem: metrics.NodeClaimSubsystem, Name: "unhealthy_disrupted_total",
	Help: "Number of unhealthy nodeclaims disrupted in total by Karpenter. Labeled by condition on the node was disrupted, the owning nodepool and capacity type.",
}, []string{conditionLabel, metrics.NodePoolLabel, metrics.CapacityTypeLabel})
