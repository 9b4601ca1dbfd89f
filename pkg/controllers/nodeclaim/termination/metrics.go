package termination

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/karp-autoscaler/karp/pkg/metrics"
)

var (
	// TerminationDurationSeconds times a NodeClaim's termination, from its
	// deletion timestamp to the finalizer's removal (upstream's
	// karpenter_nodeclaims_termination_duration_seconds, same buckets).
	TerminationDurationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: metrics.Namespace, Subsystem: metrics.NodeClaimSubsystem, Name: "termination_duration_seconds",
		Help:    "Duration of NodeClaim termination in seconds.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 12),
	}, []string{metrics.NodePoolLabel})

	// InstanceTerminationDurationSeconds times the instance's termination,
	// from InstanceTerminating turning True to the finalizer's removal
	// (upstream's karpenter_nodeclaims_instance_termination_duration_seconds).
	InstanceTerminationDurationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: metrics.Namespace, Subsystem: metrics.NodeClaimSubsystem, Name: "instance_termination_duration_seconds",
		Help:    "Duration of CloudProvider Instance termination in seconds.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 11),
	}, []string{metrics.NodePoolLabel})
)
