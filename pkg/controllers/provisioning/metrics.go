package provisioning

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/karp-autoscaler/karp/pkg/state"
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

	ignoredPods = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Subsystem: schedulerSubsystem, Name: "ignored_pods_count",
		Help: "The number of pending pods the last provisioning pass ignored (invalid node constraints, or asking for no karp node).",
	})
)

// Register registers the provisioner's metrics with reg. The
// karpenter_nodeclaims_created_total counter the provisioner increments is
// registered by pkg/metrics.
func Register(reg prometheus.Registerer) error {
	var errs []error
	for _, c := range []prometheus.Collector{schedulingDurationVec, queueDepthVec, unschedulablePodsVec, ignoredPods} {
		errs = append(errs, reg.Register(c))
	}
	return errors.Join(errs...)
}

// MetricsRegistrar registers the provisioner's and the cluster state's
// metrics when the operator registers its controllers, so they are served
// with the manager's. A second registration in the same process (tests
// that build several operators) keeps the first.
type MetricsRegistrar struct {
	reg     prometheus.Registerer
	cluster *state.Cluster
}

// NewMetricsRegistrar returns the registrar for reg.
func NewMetricsRegistrar(reg prometheus.Registerer, cluster *state.Cluster) *MetricsRegistrar {
	return &MetricsRegistrar{reg: reg, cluster: cluster}
}

// Name names the registrar in the controller list.
func (m *MetricsRegistrar) Name() string { return "provisioner.metrics" }

// Register registers the metrics.
func (m *MetricsRegistrar) Register(context.Context, manager.Manager) error {
	return ignoreAlreadyRegistered(errors.Join(Register(m.reg), state.Register(m.reg, m.cluster)))
}

func ignoreAlreadyRegistered(err error) error {
	var kept []error
	for _, e := range flatten(err) {
		if are := (prometheus.AlreadyRegisteredError{}); !errors.As(e, &are) {
			kept = append(kept, e)
		}
	}
	return errors.Join(kept...)
}

// flatten lists the errors inside nested errors.Join values.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range joined.Unwrap() {
		out = append(out, flatten(e)...)
	}
	return out
}
