package provisioning

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

const (
	metricsNamespace   = "karpenter"
	schedulerSubsystem = "scheduler"
	nodeClaimSubsystem = "nodeclaims"
	controllerLabel    = "controller"
	provisionerName    = "provisioner"
)

var (
	schedulingDurationVec = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: metricsNamespace, Subsystem: schedulerSubsystem, Name: "scheduling_duration_seconds",
		Help:    "Duration of scheduling simulations used for deprovisioning and provisioning in seconds.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
	}, []string{controllerLabel})
	schedulingDuration = schedulingDurationVec.WithLabelValues(provisionerName)

	queueDepthVec = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Subsystem: schedulerSubsystem, Name: "queue_depth",
		Help: "The number of pods currently waiting to be scheduled.",
	}, []string{controllerLabel})
	queueDepth = queueDepthVec.WithLabelValues(provisionerName)

	unschedulablePodsVec = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Subsystem: schedulerSubsystem, Name: "unschedulable_pods_count",
		Help: "The number of unschedulable Pods.",
	}, []string{controllerLabel})
	unschedulablePods = unschedulablePodsVec.WithLabelValues(provisionerName)
)

// Register registers the provisioner's metrics with reg. The
// karpenter_nodeclaims_created_total counter the provisioner increments is
// registered by pkg/metrics.
func Register(reg prometheus.Registerer) error {
	var errs []error
	for _, c := range []prometheus.Collector{schedulingDurationVec, queueDepthVec, unschedulablePodsVec} {
		errs = append(errs, reg.Register(c))
	}
	return errors.Join(errs...)
}
