package status

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The deprecated kind-agnostic counter and histograms, shared by every
// kind that reports into them; as operatorpkg's package-level ones, they
// have the default buckets.
var (
	deprecatedTransitionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "status_condition", Name: "transitions_total", Help: helpTotal,
	}, []string{"type", "status", "reason", "group", "kind"})
	deprecatedTransitionSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "status_condition", Name: "transition_seconds", Help: helpTransition,
		Buckets: prometheus.DefBuckets,
	}, []string{"type", "status", "group", "kind"})
	deprecatedTerminationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "termination", Name: "duration_seconds", Help: helpTermination,
		Buckets: prometheus.DefBuckets,
	}, []string{"group", "kind"})
)

// Metrics are one kind's observed metrics: its transition counter, its
// transition and termination histograms, and the deprecated ones it also
// reports into (nil for kinds without them).
type Metrics struct {
	kind Kind

	total, deprecatedTotal             *prometheus.CounterVec
	transition, deprecatedTransition   *prometheus.HistogramVec
	termination, deprecatedTermination *prometheus.HistogramVec
}

// NewMetrics returns kind's metrics, unregistered.
func NewMetrics(kind Kind) *Metrics {
	extra := kind.labelNames()
	buckets := kind.buckets
	if len(buckets) == 0 {
		buckets = prometheus.DefBuckets
	}
	m := &Metrics{
		kind: kind,
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: kind.name + "_status_condition", Name: "transitions_total", Help: helpTotal,
		}, append([]string{"type", "status", "reason"}, extra...)),
		transition: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: kind.name + "_status_condition", Name: "transition_seconds", Help: helpTransition,
			Buckets: buckets,
		}, append([]string{"type", "status"}, extra...)),
		termination: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: kind.name + "_termination", Name: "duration_seconds", Help: helpTermination,
			Buckets: buckets,
		}, extra),
	}
	if kind.deprecated {
		m.deprecatedTotal, m.deprecatedTransition, m.deprecatedTermination =
			deprecatedTransitionsTotal, deprecatedTransitionSeconds, deprecatedTerminationSeconds
	}
	return m
}

// Collectors are the metrics' collectors, the deprecated ones included.
func (m *Metrics) Collectors() []prometheus.Collector {
	out := []prometheus.Collector{m.total, m.transition, m.termination}
	if m.kind.deprecated {
		out = append(out, m.deprecatedTotal, m.deprecatedTransition, m.deprecatedTermination)
	}
	return out
}

// observeTransition counts a condition's new status and, when its previous
// status (old) is known, observes how long that lasted.
func (m *Metrics) observeTransition(cond metav1.Condition, old *metav1.Condition, labels []string) {
	m.total.WithLabelValues(append([]string{cond.Type, string(cond.Status), cond.Reason}, labels...)...).Inc()
	if m.deprecatedTotal != nil {
		m.deprecatedTotal.WithLabelValues(cond.Type, string(cond.Status), cond.Reason, m.kind.gk.Group, m.kind.gk.Kind).Inc()
	}
	if old == nil {
		return
	}
	lasted := max(0, cond.LastTransitionTime.Sub(old.LastTransitionTime.Time).Seconds())
	m.transition.WithLabelValues(append([]string{old.Type, string(old.Status)}, labels...)...).Observe(lasted)
	if m.deprecatedTransition != nil {
		m.deprecatedTransition.WithLabelValues(old.Type, string(old.Status), m.kind.gk.Group, m.kind.gk.Kind).Observe(lasted)
	}
}

// observeTermination observes a finished termination.
func (m *Metrics) observeTermination(seconds float64, labels []string) {
	m.termination.WithLabelValues(labels...).Observe(seconds)
	if m.deprecatedTermination != nil {
		m.deprecatedTermination.WithLabelValues(m.kind.gk.Group, m.kind.gk.Kind).Observe(seconds)
	}
}

// RegisterMetrics registers kind's gauge collector over reader and its
// observed metrics with reg, and returns the metrics to record into.
// Metrics registered already (a second operator in the process, or a
// second kind sharing the deprecated ones) are kept and recorded into; an
// already registered gauge collector reads reader from then on.
func RegisterMetrics(reg prometheus.Registerer, reader client.Reader, clk clock.PassiveClock, kind Kind) (*Metrics, error) {
	m := NewMetrics(kind)
	collectors := []prometheus.Collector{NewCollector(reader, clk, kind)}
	if kind.deprecated {
		collectors = append(collectors, deprecatedDescriber{})
	}
	var errs []error
	for _, c := range append(collectors, m.Collectors()...) {
		err := reg.Register(c)
		var already prometheus.AlreadyRegisteredError
		if err == nil || !errors.As(err, &already) {
			errs = append(errs, err)
			continue
		}
		switch existing := already.ExistingCollector.(type) {
		case *Collector:
			existing.setReader(reader)
		case *prometheus.CounterVec:
			m.adoptCounter(existing)
		case *prometheus.HistogramVec:
			m.adoptHistogram(existing)
		}
	}
	return m, errors.Join(errs...)
}

func (m *Metrics) adoptCounter(existing *prometheus.CounterVec) {
	for _, p := range []**prometheus.CounterVec{&m.total, &m.deprecatedTotal} {
		if *p != nil && sameDesc(*p, existing) {
			*p = existing
		}
	}
}

func (m *Metrics) adoptHistogram(existing *prometheus.HistogramVec) {
	for _, p := range []**prometheus.HistogramVec{&m.transition, &m.termination, &m.deprecatedTransition, &m.deprecatedTermination} {
		if *p != nil && sameDesc(*p, existing) {
			*p = existing
		}
	}
}

func sameDesc(a, b prometheus.Collector) bool {
	da, db := make(chan *prometheus.Desc, 1), make(chan *prometheus.Desc, 1)
	a.Describe(da)
	b.Describe(db)
	return (<-da).String() == (<-db).String()
}
