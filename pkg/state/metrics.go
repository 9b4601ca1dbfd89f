package state

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/metrics"
)

// nodeLabelNames maps the well-known node labels to the metric label names
// upstream uses (the part after "/", snake_case), so its dashboards keep
// working; node_name and resource_type come first, phase and managed last.
var nodeLabelNames, nodeLabelKeys = wellKnownMetricLabels()

func wellKnownMetricLabels() ([]string, []string) {
	keys := karpv1.WellKnownLabels.UnsortedList()
	sort.Strings(keys)
	names := []string{"node_name", "resource_type"}
	var labelKeys []string
	for _, k := range keys {
		_, name, ok := strings.Cut(k, "/")
		if !ok {
			continue
		}
		names = append(names, strings.ReplaceAll(strings.ToLower(name), "-", "_"))
		labelKeys = append(labelKeys, k)
	}
	// Then the node's phase and whether karp manages it (has a NodeClaim),
	// as upstream's node gauges carry them (nodeStatusValues).
	return append(names, "phase", "managed"), labelKeys
}

// nodeStatusValues are the values of the last two node labels: the
// Node's status.phase and whether karp manages it.
func nodeStatusValues(sn *StateNode) []string {
	return []string{string(sn.Node.Status.Phase), strconv.FormatBool(sn.Managed())}
}

var (
	nodeAllocatableDesc = prometheus.NewDesc(metrics.Namespace+"_nodes_allocatable",
		"Node allocatable are the resources allocatable by nodes.", nodeLabelNames, nil)
	nodePodRequestsDesc = prometheus.NewDesc(metrics.Namespace+"_nodes_total_pod_requests",
		"Node total pod requests are the resources requested by pods bound to nodes, including the DaemonSet pods.", nodeLabelNames, nil)
	nodeDaemonRequestsDesc = prometheus.NewDesc(metrics.Namespace+"_nodes_total_daemon_requests",
		"Node total daemon requests are the resource requested by DaemonSet pods bound to nodes.", nodeLabelNames, nil)
	nodeCountDesc = prometheus.NewDesc(metrics.Namespace+"_cluster_state_node_count",
		"Current count of nodes in cluster state", nil, nil)
	syncedDesc = prometheus.NewDesc(metrics.Namespace+"_cluster_state_synced",
		"Returns 1 if cluster state is synced and 0 otherwise. Synced checks that nodeclaims and nodes that are stored in the APIServer have the same representation as Karpenter's cluster state", nil, nil)
	unsyncedTimeDesc = prometheus.NewDesc(metrics.Namespace+"_cluster_state_unsynced_time_seconds",
		"The time for which cluster state is not synced", nil, nil)
)

// Collector exports the view as the upstream node gauges at scrape time,
// so series of deleted nodes disappear with them. node_name is a label, as
// upstream has it, because its dashboards group by it; the series count is
// bounded by the node count.
type Collector struct {
	cluster *Cluster
	price   PriceFunc
}

// NewCollector returns the collector of the view's metrics. NodePool costs
// are priced with the offerings the cloud provider last reported
// (metrics.Offerings).
func NewCollector(cluster *Cluster, opts ...CollectorOption) *Collector {
	c := &Collector{cluster: cluster, price: offeringPrice}
	for _, o := range opts {
		o(c)
	}
	return c
}

// CollectorOption adjusts NewCollector.
type CollectorOption func(*Collector)

// WithPrices prices NodePool costs with price instead of the reported
// offerings.
func WithPrices(price PriceFunc) CollectorOption { return func(c *Collector) { c.price = price } }

func offeringPrice(instanceType, capacityType, zone string) (float64, bool) {
	price, _, ok := metrics.Offerings.Get(instanceType, capacityType, zone)
	return price, ok
}

// Register registers the view's metrics with reg: the node and pod
// gauges (computed at scrape time) and the pod startup summary.
func Register(reg prometheus.Registerer, cluster *Cluster) error {
	return errors.Join(reg.Register(NewCollector(cluster)), reg.Register(PodStartupDuration), reg.Register(PodBoundDuration),
		reg.Register(PodProvisioningBoundDuration), reg.Register(PodProvisioningStartupDuration), reg.Register(PodSchedulingDecisionDuration))
}

// Describe implements prometheus.Collector.
func (m *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{nodeAllocatableDesc, nodePodRequestsDesc, nodeDaemonRequestsDesc, nodeCountDesc, syncedDesc, unsyncedTimeDesc, podStateDesc,
		clusterUtilizationDesc, nodePoolCostDesc, podUnboundDesc, podUnstartedDesc,
		nodePodLimitsDesc, nodeDaemonLimitsDesc, nodeSystemOverheadDesc, nodeLifetimeDesc,
		podProvisioningUnboundDesc, podProvisioningUnstartedDesc, podSchedulingUndecidedDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *Collector) Collect(ch chan<- prometheus.Metric) {
	nodes := m.cluster.Nodes()
	now := m.cluster.Clock().Now()
	registered := 0
	for _, sn := range nodes {
		if sn.Node == nil {
			continue
		}
		registered++
		emit(ch, nodeAllocatableDesc, sn, sn.Allocatable())
		emit(ch, nodePodRequestsDesc, sn, sn.PodRequests())
		emit(ch, nodeDaemonRequestsDesc, sn, sn.DaemonRequests())
		emitNodeLimitsAndAge(ch, sn, now)
	}
	ch <- prometheus.MustNewConstMetric(nodeCountDesc, prometheus.GaugeValue, float64(registered))
	emitClusterUtilization(ch, nodes)
	emitNodePoolCost(ch, nodes, m.price)
	synced := 0.0
	// Collect has no context; Synced lists through the manager's cache.
	if ok, err := m.cluster.Synced(context.Background()); err == nil && ok { //nolint:forbidigo // prometheus.Collector.Collect is the root
		synced = 1
	}
	ch <- prometheus.MustNewConstMetric(syncedDesc, prometheus.GaugeValue, synced)
	ch <- prometheus.MustNewConstMetric(unsyncedTimeDesc, prometheus.GaugeValue, m.cluster.UnsyncedFor().Seconds())
	m.cluster.collectPods(ch)
}

func emit(ch chan<- prometheus.Metric, desc *prometheus.Desc, sn *StateNode, resources corev1.ResourceList) {
	labels := sn.Node.Labels
	for name, q := range resources {
		values := []string{sn.Node.Name, resourceTypeLabel(name)}
		for _, k := range nodeLabelKeys {
			values = append(values, labels[k])
		}
		values = append(values, nodeStatusValues(sn)...)
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, quantityValue(q), values...)
	}
}

// resourceTypeLabel renders a resource name as upstream does (cpu, memory,
// pods, nvidia_com_gpu...).
func resourceTypeLabel(name corev1.ResourceName) string {
	return strings.NewReplacer("/", "_", ".", "_", "-", "_").Replace(string(name))
}

// quantityValue is cores for cpu, bytes for memory, the count otherwise.
func quantityValue(q resource.Quantity) float64 { return q.AsApproximateFloat64() }
