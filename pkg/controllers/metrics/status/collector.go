package status

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
)

const namespace = "operator"

// conditionLabels are the labels every series has, in this order.
var conditionLabels = []string{"namespace", "name", "type", "status", "reason"}

// kindDescs are the three gauges of one kind: its conditions' count and
// age, and how long its terminating objects have been terminating.
type kindDescs struct {
	count, seconds, terminating *prometheus.Desc
}

// newKindDescs names the gauges of the kind whose metric prefix is prefix
// ("nodeclaim_"; "" for the deprecated kind-agnostic series).
func newKindDescs(prefix string, extra []string) kindDescs {
	subsystem := prefix + "status_condition"
	labels := append(append([]string{}, conditionLabels...), extra...)
	return kindDescs{
		terminating: prometheus.NewDesc(prometheus.BuildFQName(namespace, prefix+"termination", "current_time_seconds"),
			"The current amount of time in seconds that an object has been in terminating state.",
			append([]string{"namespace", "name"}, extra...), nil),
		count: prometheus.NewDesc(prometheus.BuildFQName(namespace, subsystem, "count"),
			"The number of a condition for a given object, type and status. e.g. Alarm := Available=False > 0", labels, nil),
		seconds: prometheus.NewDesc(prometheus.BuildFQName(namespace, subsystem, "current_status_seconds"),
			"The current amount of time in seconds that a status condition has been in a specific state. Alarm := P99(Updated=Unknown) > 5 minutes", labels, nil),
	}
}

// Collector emits the status-condition gauges of the NodeClaims and
// NodePools in reader at scrape time.
type Collector struct {
	clock clock.PassiveClock
	cache client.Reader
	// nodeClaimLabels are the NodeClaim label keys added as metric labels
	// (the NodeClass label of each supported kind, then the NodePool's).
	nodeClaimLabels []string

	nodeClaim, nodePool, deprecated kindDescs
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns the collector over cache; nodeClaimLabels are the
// NodeClaim label keys to add, as upstream's status controller is given.
func NewCollector(cache client.Reader, clk clock.PassiveClock, nodeClaimLabels []string) *Collector {
	extra := make([]string, 0, len(nodeClaimLabels))
	for _, k := range nodeClaimLabels {
		extra = append(extra, prometheusLabel(k))
	}
	return &Collector{
		clock: clk, cache: cache, nodeClaimLabels: nodeClaimLabels,
		nodeClaim:  newKindDescs("nodeclaim_", extra),
		nodePool:   newKindDescs("nodepool_", nil),
		deprecated: newKindDescs("", []string{"group", "kind"}),
	}
}

// prometheusLabel turns a label key into a metric label name as
// operatorpkg does ("karpenter.sh/nodepool" -> "karpenter_sh_nodepool").
func prometheusLabel(key string) string {
	return strings.NewReplacer("/", "_", ".", "_", "-", "_").Replace(key)
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []kindDescs{c.nodeClaim, c.nodePool, c.deprecated} {
		ch <- d.count
		ch <- d.seconds
		ch <- d.terminating
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) //nolint:forbidigo // Collect gets no context: a scrape is its own root
	defer cancel()
	now := c.clock.Now()
	var claims karpv1.NodeClaimList
	if err := c.cache.List(ctx, &claims, client.UnsafeDisableDeepCopy); err == nil {
		for i := range claims.Items {
			nc := &claims.Items[i]
			extra := make([]string, 0, len(c.nodeClaimLabels))
			for _, k := range c.nodeClaimLabels {
				extra = append(extra, nc.Labels[k])
			}
			c.emit(ch, now, c.nodeClaim, nc.Name, nc.Status.Conditions, extra, "NodeClaim")
			c.emitTerminating(ch, now, c.nodeClaim, nc, extra, "NodeClaim")
		}
	}
	var pools karpv1.NodePoolList
	if err := c.cache.List(ctx, &pools, client.UnsafeDisableDeepCopy); err == nil {
		for i := range pools.Items {
			np := &pools.Items[i]
			c.emit(ch, now, c.nodePool, np.Name, np.Status.Conditions, nil, "NodePool")
			c.emitTerminating(ch, now, c.nodePool, np, nil, "NodePool")
		}
	}
}

// emit sends the kind's and the deprecated series of each condition of a
// cluster-scoped object (namespace "").
func (c *Collector) emit(ch chan<- prometheus.Metric, now time.Time, d kindDescs, name string, conditions []metav1.Condition, extra []string, kind string) {
	for _, cond := range conditions {
		base := []string{"", name, cond.Type, string(cond.Status), cond.Reason}
		seconds := max(0, now.Sub(cond.LastTransitionTime.Time).Seconds())
		own := append(append([]string{}, base...), extra...)
		ch <- prometheus.MustNewConstMetric(d.count, prometheus.GaugeValue, 1, own...)
		ch <- prometheus.MustNewConstMetric(d.seconds, prometheus.GaugeValue, seconds, own...)
		old := append(append([]string{}, base...), karpv1.Group, kind)
		ch <- prometheus.MustNewConstMetric(c.deprecated.count, prometheus.GaugeValue, 1, old...)
		ch <- prometheus.MustNewConstMetric(c.deprecated.seconds, prometheus.GaugeValue, seconds, old...)
	}
}

// emitTerminating sends, for an object being deleted, how long it has been
// terminating (since its deletion timestamp), under the kind's and the
// deprecated name.
func (c *Collector) emitTerminating(ch chan<- prometheus.Metric, now time.Time, d kindDescs, obj client.Object, extra []string, kind string) {
	deleted := obj.GetDeletionTimestamp()
	if deleted == nil {
		return
	}
	seconds := max(0, now.Sub(deleted.Time).Seconds())
	base := []string{obj.GetNamespace(), obj.GetName()}
	ch <- prometheus.MustNewConstMetric(d.terminating, prometheus.GaugeValue, seconds, append(append([]string{}, base...), extra...)...)
	ch <- prometheus.MustNewConstMetric(c.deprecated.terminating, prometheus.GaugeValue, seconds, append(base, karpv1.Group, kind)...)
}

// Registrar registers the status-condition metrics: the scrape-time
// gauges over the manager's cache and the transition controllers of
// NodeClaims and NodePools.
type Registrar struct {
	reg           prometheus.Registerer
	clock         clock.PassiveClock
	cloudProvider cloudprovider.CloudProvider
	recorder      events.EventRecorder
}

// NewRegistrar returns the registrar for reg; recorder receives the
// condition transition events.
func NewRegistrar(reg prometheus.Registerer, clk clock.PassiveClock, cloudProvider cloudprovider.CloudProvider, recorder events.EventRecorder) *Registrar {
	return &Registrar{reg: reg, clock: clk, cloudProvider: cloudProvider, recorder: recorder}
}

// Name names the registrar in the controller list.
func (r *Registrar) Name() string { return "metrics.status" }

// Register registers the collector and the transition controllers. The
// NodeClaim labels are the NodeClass label of each kind the provider
// supports (group/lower-case kind) and the NodePool label, as upstream's.
// Metrics registered already in the process (tests that build several
// operators) are kept.
func (r *Registrar) Register(ctx context.Context, mgr manager.Manager) error {
	var labels []string
	for _, nc := range r.cloudProvider.GetSupportedNodeClasses() {
		gvk, err := apiutil.GVKForObject(nc, mgr.GetScheme())
		if err != nil {
			return err
		}
		labels = append(labels, gvk.Group+"/"+strings.ToLower(gvk.Kind))
	}
	labels = append(labels, karpv1.NodePoolLabelKey)
	extra := make([]string, 0, len(labels))
	for _, k := range labels {
		extra = append(extra, prometheusLabel(k))
	}
	nodeClaims := &transitionController[*karpv1.NodeClaim]{kind: "NodeClaim", labelKeys: labels,
		newObject:  func() *karpv1.NodeClaim { return &karpv1.NodeClaim{} },
		conditions: func(nc *karpv1.NodeClaim) []metav1.Condition { return nc.Status.Conditions },
		metrics:    newTransitionMetrics("nodeclaim", extra), recorder: r.recorder, lastObserve: map[string][]metav1.Condition{}}
	nodePools := &transitionController[*karpv1.NodePool]{kind: "NodePool",
		newObject:  func() *karpv1.NodePool { return &karpv1.NodePool{} },
		conditions: func(np *karpv1.NodePool) []metav1.Condition { return np.Status.Conditions },
		metrics:    newTransitionMetrics("nodepool", nil), recorder: r.recorder, lastObserve: map[string][]metav1.Condition{}}

	collectors := append([]prometheus.Collector{NewCollector(mgr.GetClient(), r.clock, labels)}, nodeClaims.metrics.collectors()...)
	collectors = append(collectors, nodePools.metrics.total, nodePools.metrics.duration)
	for _, c := range collectors {
		if err := r.reg.Register(c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if !errors.As(err, &already) {
				return err
			}
			// Keep the registered one: a second operator in the process
			// reports into it.
			adopt(already.ExistingCollector, nodeClaims.metrics, nodePools.metrics)
		}
	}
	return errors.Join(nodeClaims.Register(ctx, mgr), nodePools.Register(ctx, mgr))
}

// adopt points the transition metrics at an already registered collector
// of the same name.
func adopt(existing prometheus.Collector, metrics ...*transitionMetrics) {
	for _, m := range metrics {
		if cv, ok := existing.(*prometheus.CounterVec); ok && sameDesc(cv, m.total) {
			m.total = cv
		}
		if hv, ok := existing.(*prometheus.HistogramVec); ok && sameDesc(hv, m.duration) {
			m.duration = hv
		}
	}
}

func sameDesc(a, b prometheus.Collector) bool {
	da, db := make(chan *prometheus.Desc, 1), make(chan *prometheus.Desc, 1)
	a.Describe(da)
	b.Describe(db)
	return (<-da).String() == (<-db).String()
}
