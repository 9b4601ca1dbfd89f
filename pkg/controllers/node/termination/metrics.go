package termination

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/karp-autoscaler/karp/pkg/metrics"
)

const (
	podsSubsystem = "pods"
	codeLabel     = "code"
)

var (
	// nodesDrainedTotal counts nodes whose drain completed.
	nodesDrainedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: metrics.NodeSubsystem, Name: "drained_total",
		Help: "The total number of nodes drained by Karpenter",
	}, []string{metrics.NodePoolLabel})

	// nodesTerminationDurationSeconds is the time from a Node's deletion
	// to the release of its finalizer.
	nodesTerminationDurationSeconds = prometheus.NewSummaryVec(prometheus.SummaryOpts{
		Namespace: metrics.Namespace, Subsystem: metrics.NodeSubsystem, Name: "termination_duration_seconds",
		Help:       "The time taken between a node's deletion request and the removal of its finalizer",
		Objectives: map[float64]float64{0: 0.01, 0.5: 0.05, 0.9: 0.01, 0.99: 0.001, 1: 0.01},
	}, []string{metrics.NodePoolLabel})

	// nodesLifetimeDurationSeconds is a Node's age when it was released.
	nodesLifetimeDurationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: metrics.Namespace, Subsystem: metrics.NodeSubsystem, Name: "lifetime_duration_seconds",
		Help:    "The lifetime duration of the nodes since creation.",
		Buckets: []float64{60, 300, 900, 1800, 3600, 7200, 14400, 28800, 43200, 86400, 172800, 345600, 604800, 1209600, 2419200},
	}, []string{metrics.NodePoolLabel})

	// podsDrainedTotal counts pods evicted by drains, by the disruption reason.
	podsDrainedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: podsSubsystem, Name: "drained_total",
		Help: "Number of pods drained during node termination. Labeled by the reason the node was disrupted.",
	}, []string{metrics.ReasonLabel})

	// podsEvictionRequestsTotal counts eviction requests by response code.
	podsEvictionRequestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: podsSubsystem, Name: "eviction_requests_total",
		Help: "The number of eviction requests by response code.",
	}, []string{codeLabel})

	// podsEvictionsHeldTotal counts evictions karp held back because they
	// would exceed the rollout budget of the pod's controller (karp's own).
	podsEvictionsHeldTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: podsSubsystem, Name: "evictions_held_by_rollout_budget_total",
		Help: "The number of evictions held back because they would make more of the pod's controller's replicas unavailable than its rollout budget (maxUnavailable) allows.",
	})
)

// collectors lists this package's metrics for registration.
func collectors() []prometheus.Collector {
	return []prometheus.Collector{nodesDrainedTotal, nodesTerminationDurationSeconds, nodesLifetimeDurationSeconds,
		podsDrainedTotal, podsEvictionRequestsTotal, podsEvictionsHeldTotal}
}
