package provisioning

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/karp-autoscaler/karp/pkg/metrics"
)

const (
	schedulerSubsystem = "scheduler"
	nodeClaimSubsystem = "nodeclaims"
	controllerLabel    = "controller"
	provisionerName    = "provisioner"
)

var (
	schedulingDurationVec = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: metrics.Namespace, Subsystem: schedulerSubsystem, Name: "scheduling_duration_seconds",
		Help:    "Duration of scheduling simulations used for deprovisioning and provisioning in seconds.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
	}, []string{controllerLabel})
	schedulingDuration = schedulingDurationVec.WithLabelValues(provisionerName)

	queueDepthVec = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: schedulerSubsystem, Name: "queue_depth",
		Help: "The number of pods currently waiting to be scheduled.",
	}, []string{controllerLabel, schedulingIDLabel})

	unschedulablePodsVec = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: schedulerSubsystem, Name: "unschedulable_pods_count",
		Help: "The number of unschedulable Pods.",
	}, []string{controllerLabel})
	unschedulablePods = unschedulablePodsVec.WithLabelValues(provisionerName)

	pendingByZoneVec = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: schedulerSubsystem, Name: "pending_pods_by_effective_zone_count",
		Help: "Pending pods dimensioned by effective zone constraint, or the intersection of pod-level zone signals, volume topology (PVC zones), and topology constraints. Values: specific zone name (e.g., 'us-west-2a'), 'flexible' (multiple zones), or 'none' (no valid intersection).",
	}, []string{controllerLabel, "zone"})

	ignoredPods = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: schedulerSubsystem, Name: "ignored_pods_count",
		Help: "The number of pending pods the last provisioning pass ignored (invalid node constraints, or asking for no karp node).",
	})
)

// Register registers the provisioner's metrics with reg. The
// karpenter_nodeclaims_created_total counter the provisioner increments is
// registered by pkg/metrics.
func Register(reg prometheus.Registerer) error {
	var errs []error
	for _, c := range []prometheus.Collector{schedulingDurationVec, queueDepthVec, unfinishedWorkVec, unschedulablePodsVec, pendingByZoneVec, ignoredPods} {
		errs = append(errs, reg.Register(c))
	}
	return errors.Join(errs...)
}

// MetricsRegistrar registers the provisioner's metrics when the operator
// registers its controllers, so they are served with the manager's. A
// second registration in the same process (tests that build several
// operators) keeps the first.
type MetricsRegistrar struct {
	reg prometheus.Registerer
}

// NewMetricsRegistrar returns the registrar for reg.
func NewMetricsRegistrar(reg prometheus.Registerer) *MetricsRegistrar {
	return &MetricsRegistrar{reg: reg}
}

// Name names the registrar in the controller list.
func (m *MetricsRegistrar) Name() string { return "provisioner.metrics" }

// Register registers the metrics.
func (m *MetricsRegistrar) Register(context.Context, manager.Manager) error {
	return metrics.IgnoreAlreadyRegistered(Register(m.reg))
}

// setPendingByZone replaces the provisioner's pending-by-zone series with
// the last solve's counts, so a zone no pod waits for any more leaves.
func setPendingByZone(counts map[string]int) {
	pendingByZoneVec.DeletePartialMatch(prometheus.Labels{controllerLabel: provisionerName})
	for zone, n := range counts {
		pendingByZoneVec.WithLabelValues(provisionerName, zone).Set(float64(n))
	}
}
