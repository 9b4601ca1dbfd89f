package instance

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/karp-autoscaler/karp/pkg/metrics"
)

// Label names of the provider's metrics (upstream's).
const (
	zoneIDLabel  = "zone_id"
	batcherLabel = "batcher"
)

var (
	// LaunchFailuresTotal counts the offerings CreateFleet refused, one per
	// error entry, by zone, zone ID, capacity type and error code.
	LaunchFailuresTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace,
		Subsystem: metrics.CloudProviderSubsystem,
		Name:      "instance_launch_failures_total",
		Help:      "Offerings CreateFleet refused, by zone, zone ID, capacity type and error code.",
	}, []string{metrics.ZoneLabel, zoneIDLabel, metrics.CapacityTypeLabel, metrics.ReasonLabel})
	// TerminationFailuresTotal counts the failed TerminateInstances calls
	// of Delete, by the instance's zone and zone ID.
	TerminationFailuresTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace,
		Subsystem: metrics.CloudProviderSubsystem,
		Name:      "instance_termination_failures_total",
		Help:      "Number of instance termination (TerminateInstances) failures, dimensioned by availability zone and zone ID.",
	}, []string{metrics.ZoneLabel, zoneIDLabel})
	// BatchSize is how many requests each executed batch held, by batcher
	// (create_fleet, describe_instances, terminate_instances).
	BatchSize = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: metrics.Namespace,
		Subsystem: metrics.CloudProviderSubsystem,
		Name:      "batcher_batch_size",
		Help:      "Requests per executed batch of AWS calls, by batcher.",
		Buckets:   sizeBuckets,
	}, []string{batcherLabel})
	// BatchTime is how long each batch's window stayed open, from its
	// first request until it ran, by batcher.
	BatchTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: metrics.Namespace,
		Subsystem: metrics.CloudProviderSubsystem,
		Name:      "batcher_batch_time_seconds",
		Help:      "Duration of the batching window per batcher",
		Buckets:   metrics.DurationBuckets(),
	}, []string{batcherLabel})
)

// sizeBuckets are upstream's batch size buckets (aws/karpenter-provider-aws
// v1.14.1 pkg/batcher/metrics.go SizeBuckets).
var sizeBuckets = []float64{1, 2, 4, 5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100, 125, 150, 175, 200,
	225, 250, 275, 300, 350, 400, 450, 500, 550, 600, 700, 800, 900, 1000}

// Register registers the provider's metrics with reg; registering them
// again is not an error.
func Register(reg prometheus.Registerer) error {
	var errs []error
	for _, c := range []prometheus.Collector{LaunchFailuresTotal, TerminationFailuresTotal, BatchSize, BatchTime} {
		if err := reg.Register(c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if !errors.As(err, &already) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
