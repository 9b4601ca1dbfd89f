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
	// BatchSize is how many requests each executed batch held, by batcher
	// (create_fleet, describe_instances, terminate_instances).
	BatchSize = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: metrics.Namespace,
		Subsystem: metrics.CloudProviderSubsystem,
		Name:      "batcher_batch_size",
		Help:      "Requests per executed batch of AWS calls, by batcher.",
		Buckets:   []float64{1, 2, 4, 5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100, 200, 250, 500, 1000},
	}, []string{batcherLabel})
)

// Register registers the provider's metrics with reg; registering them
// again is not an error.
func Register(reg prometheus.Registerer) error {
	var errs []error
	for _, c := range []prometheus.Collector{LaunchFailuresTotal, BatchSize} {
		if err := reg.Register(c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if !errors.As(err, &already) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
