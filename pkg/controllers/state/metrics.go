package state

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/karp-autoscaler/karp/pkg/metrics"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// MetricsRegistrar registers the cluster state's metrics (state.Register:
// cluster utilization and cost, node and pod gauges, pod startup and
// scheduling-decision durations) when the operator registers its
// controllers, beside the informers that feed the state, so they are
// served with the manager's. A second registration in the same process
// keeps the first.
type MetricsRegistrar struct {
	reg     prometheus.Registerer
	cluster *state.Cluster
}

// NewMetricsRegistrar returns the registrar for reg.
func NewMetricsRegistrar(reg prometheus.Registerer, cluster *state.Cluster) *MetricsRegistrar {
	return &MetricsRegistrar{reg: reg, cluster: cluster}
}

// Name names the registrar in the controller list.
func (m *MetricsRegistrar) Name() string { return "state.metrics" }

// Register registers the metrics.
func (m *MetricsRegistrar) Register(context.Context, manager.Manager) error {
	return metrics.IgnoreAlreadyRegistered(state.Register(m.reg, m.cluster))
}
