package status

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// namespace prefixes operatorpkg's metrics.
const namespace = "operator"

// Help strings, as operatorpkg's.
const (
	helpCount       = "The number of a condition for a given object, type and status. e.g. Alarm := Available=False > 0"
	helpSeconds     = "The current amount of time in seconds that a status condition has been in a specific state. Alarm := P99(Updated=Unknown) > 5 minutes"
	helpTerminating = "The current amount of time in seconds that an object has been in terminating state."
	helpTotal       = "The count of transitions of a given object, type and status."
	helpTransition  = "The amount of time a condition was in a given state before transitioning. e.g. Alarm := P99(Updated=False) > 5 minutes"
	helpTermination = "The amount of time taken by an object to terminate completely."
)

// conditionLabels start every condition gauge's labels, in this order.
var conditionLabels = []string{"namespace", "name", "type", "status", "reason"}

// gaugeDescs are the three scrape-time gauges of one kind (or of the
// deprecated kind-agnostic series): its conditions' count and age, and how
// long its terminating objects have been terminating.
type gaugeDescs struct {
	count, seconds, terminating *prometheus.Desc
}

// newGaugeDescs names the gauges with prefix ("nodeclaim_"; "" for the
// deprecated series) and the extra labels after the standard ones.
func newGaugeDescs(prefix string, extra []string) gaugeDescs {
	labels := append(append([]string{}, conditionLabels...), extra...)
	return gaugeDescs{
		count: prometheus.NewDesc(prometheus.BuildFQName(namespace, prefix+"status_condition", "count"), helpCount, labels, nil),
		seconds: prometheus.NewDesc(prometheus.BuildFQName(namespace, prefix+"status_condition", "current_status_seconds"),
			helpSeconds, labels, nil),
		terminating: prometheus.NewDesc(prometheus.BuildFQName(namespace, prefix+"termination", "current_time_seconds"),
			helpTerminating, append([]string{"namespace", "name"}, extra...), nil),
	}
}

// deprecatedGauges are the kind-agnostic gauges, labelled group and kind.
// Every kind's collector emits its own objects' series under them, and
// deprecatedDescriber alone describes them, so several kinds can report
// into one name in one registry (a registry takes each descriptor from
// one collector only; it checks a collected metric against all of them).
var deprecatedGauges = newGaugeDescs("", []string{"group", "kind"})

// deprecatedDescriber describes the deprecated gauges and collects
// nothing: the kinds' collectors emit their series.
type deprecatedDescriber struct{}

// Describe implements prometheus.Collector.
func (deprecatedDescriber) Describe(ch chan<- *prometheus.Desc) {
	ch <- deprecatedGauges.count
	ch <- deprecatedGauges.seconds
	ch <- deprecatedGauges.terminating
}

// Collect implements prometheus.Collector.
func (deprecatedDescriber) Collect(chan<- prometheus.Metric) {}

// Collector emits one kind's status-condition and termination gauges for
// the objects in its reader at scrape time (and their deprecated series
// for kinds that have them).
type Collector struct {
	kind  Kind
	clock clock.PassiveClock
	descs gaugeDescs

	mu     sync.Mutex
	reader client.Reader
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns kind's gauge collector over reader (the manager's
// cache in the process).
func NewCollector(reader client.Reader, clk clock.PassiveClock, kind Kind) *Collector {
	return &Collector{kind: kind, clock: clk, reader: reader, descs: newGaugeDescs(kind.name+"_", kind.labelNames())}
}

// setReader points an already registered collector at a new reader: a
// later operator in the same process reports its own cache.
func (c *Collector) setReader(r client.Reader) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reader = r
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.descs.count
	ch <- c.descs.seconds
	ch <- c.descs.terminating
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) //nolint:forbidigo // Collect gets no context: a scrape is its own root
	defer cancel()
	c.mu.Lock()
	reader := c.reader
	c.mu.Unlock()
	objs, err := c.kind.list(ctx, reader)
	if err != nil {
		return
	}
	now := c.clock.Now()
	gk := []string{c.kind.gk.Group, c.kind.gk.Kind}
	for _, obj := range objs {
		extra := c.kind.labelValues(obj)
		for _, cond := range c.kind.conditions(obj) {
			base := []string{obj.GetNamespace(), obj.GetName(), cond.Type, string(cond.Status), cond.Reason}
			seconds := max(0, now.Sub(cond.LastTransitionTime.Time).Seconds())
			own := append(append([]string{}, base...), extra...)
			ch <- prometheus.MustNewConstMetric(c.descs.count, prometheus.GaugeValue, 1, own...)
			ch <- prometheus.MustNewConstMetric(c.descs.seconds, prometheus.GaugeValue, seconds, own...)
			if c.kind.deprecated {
				old := append(base, gk...)
				ch <- prometheus.MustNewConstMetric(deprecatedGauges.count, prometheus.GaugeValue, 1, old...)
				ch <- prometheus.MustNewConstMetric(deprecatedGauges.seconds, prometheus.GaugeValue, seconds, old...)
			}
		}
		deleted := obj.GetDeletionTimestamp()
		if deleted == nil {
			continue
		}
		seconds := max(0, now.Sub(deleted.Time).Seconds())
		base := []string{obj.GetNamespace(), obj.GetName()}
		ch <- prometheus.MustNewConstMetric(c.descs.terminating, prometheus.GaugeValue, seconds, append(append([]string{}, base...), extra...)...)
		if c.kind.deprecated {
			ch <- prometheus.MustNewConstMetric(deprecatedGauges.terminating, prometheus.GaugeValue, seconds, append(base, gk...)...)
		}
	}
}
