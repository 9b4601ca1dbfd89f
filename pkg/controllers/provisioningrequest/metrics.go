package provisioningrequest

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/karp-autoscaler/karp/pkg/metrics"
)

const subsystem = "provisioningrequest"

var (
	decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: subsystem, Name: "decisions_total",
		Help: "ProvisioningRequest decisions, by class and reason (CapacityIsFound, CapacityIsNotFound, CapacityIsProvisioned, CapacityIsBeingProvisioned, FailedToCreatePods, Expired).",
	}, []string{"class", "reason"})
	rollbacks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: subsystem, Name: "rollbacks_total",
		Help: "Atomic ProvisioningRequest launches rolled back because some of their NodeClaims did not launch.",
	}, []string{"class"})
)

// Register registers the controller's metrics with reg.
func Register(reg prometheus.Registerer) error {
	return errors.Join(reg.Register(decisions), reg.Register(rollbacks))
}

// MetricsRegistrar registers the metrics with the operator's controllers;
// a second registration in the same process keeps the first.
type MetricsRegistrar struct{ reg prometheus.Registerer }

// NewMetricsRegistrar returns the registrar for reg.
func NewMetricsRegistrar(reg prometheus.Registerer) *MetricsRegistrar {
	return &MetricsRegistrar{reg: reg}
}

// Name names the registrar in the controller list.
func (m *MetricsRegistrar) Name() string { return "provisioningrequest.metrics" }

// Register registers the metrics.
func (m *MetricsRegistrar) Register(context.Context, manager.Manager) error {
	return metrics.IgnoreAlreadyRegistered(Register(m.reg))
}
