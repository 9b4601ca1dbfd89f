package state

import (
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/metrics"
)

var (
	clusterUtilizationDesc = prometheus.NewDesc(metrics.Namespace+"_cluster_utilization_percent",
		"Utilization of allocatable resources by pod requests", []string{"resource_type"}, nil)
	nodePoolCostDesc = prometheus.NewDesc(metrics.Namespace+"_nodepools_cost_total",
		"Total cost of the nodepool from Karpenter's perspective. Units are determined by the cloud provider. Not an authoritative source for billing.",
		[]string{"nodepool"}, nil)
)

// PriceFunc returns the hourly price of an offering and whether it is
// known (pkg/metrics' offering collector answers it).
type PriceFunc func(instanceType, capacityType, zone string) (float64, bool)

// emitClusterUtilization sends, per resource, the share of the
// registered nodes' allocatable that pod requests take, in percent.
func emitClusterUtilization(ch chan<- prometheus.Metric, nodes []*StateNode) {
	allocatable, requested := corev1.ResourceList{}, corev1.ResourceList{}
	for _, sn := range nodes {
		if sn.Node == nil {
			continue
		}
		addInto(allocatable, sn.Allocatable())
		addInto(requested, sn.PodRequests())
	}
	for name, alloc := range allocatable {
		if alloc.IsZero() {
			continue
		}
		used := requested[name]
		ratio := used.AsApproximateFloat64() / alloc.AsApproximateFloat64()
		if math.IsNaN(ratio) || math.IsInf(ratio, 0) {
			continue
		}
		ch <- prometheus.MustNewConstMetric(clusterUtilizationDesc, prometheus.GaugeValue, 100*ratio, resourceTypeLabel(name))
	}
}

// emitNodePoolCost sends, per NodePool, the summed hourly price of its
// nodes' offerings (instance type, capacity type, zone labels). Nodes
// whose offering has no known price add nothing; every NodePool with a
// node gets a series.
func emitNodePoolCost(ch chan<- prometheus.Metric, nodes []*StateNode, price PriceFunc) {
	if price == nil {
		return
	}
	cost := map[string]float64{}
	for _, sn := range nodes {
		labels := sn.Labels()
		pool := labels[karpv1.NodePoolLabelKey]
		if pool == "" {
			continue
		}
		p, ok := price(labels[corev1.LabelInstanceTypeStable], labels[karpv1.CapacityTypeLabelKey], labels[corev1.LabelTopologyZone])
		if !ok {
			p = 0
		}
		cost[pool] += p
	}
	for pool, total := range cost {
		ch <- prometheus.MustNewConstMetric(nodePoolCostDesc, prometheus.GaugeValue, total, pool)
	}
}

func addInto(into, add corev1.ResourceList) {
	for name, q := range add {
		sum := into[name]
		sum.Add(q)
		into[name] = sum
	}
}

var (
	nodePodLimitsDesc = prometheus.NewDesc(metrics.Namespace+"_nodes_total_pod_limits",
		"Node total pod limits are the resources specified by pod limits, including the DaemonSet pods.", nodeLabelNames, nil)
	nodeDaemonLimitsDesc = prometheus.NewDesc(metrics.Namespace+"_nodes_total_daemon_limits",
		"Node total daemon limits are the resources specified by DaemonSet pod limits.", nodeLabelNames, nil)
	nodeSystemOverheadDesc = prometheus.NewDesc(metrics.Namespace+"_nodes_system_overhead",
		"Node system daemon overhead are the resources reserved for system overhead, the difference between the node's capacity and allocatable values are reported by the status.",
		nodeLabelNames, nil)
	// nodeLifetimeDesc has the node labels without resource_type.
	nodeLifetimeDesc = prometheus.NewDesc(metrics.Namespace+"_nodes_current_lifetime_seconds",
		"Node age in seconds", nodeLabelNamesWithoutResource(), nil)
)

func nodeLabelNamesWithoutResource() []string {
	out := make([]string, 0, len(nodeLabelNames)-1)
	for _, n := range nodeLabelNames {
		if n != "resource_type" {
			out = append(out, n)
		}
	}
	return out
}

// emitNodeLimitsAndAge sends a registered node's pod and daemon limits,
// its system overhead (capacity minus allocatable) and its age.
func emitNodeLimitsAndAge(ch chan<- prometheus.Metric, sn *StateNode, now time.Time) {
	emit(ch, nodePodLimitsDesc, sn, sumLimits(sn.Pods, func(*corev1.Pod) bool { return true }))
	emit(ch, nodeDaemonLimitsDesc, sn, sumLimits(sn.Pods, func(p *corev1.Pod) bool { return IsOwnedBy(p, "DaemonSet") }))
	overhead := corev1.ResourceList{}
	for name, capacity := range sn.Node.Status.Capacity {
		q := capacity.DeepCopy()
		if alloc, ok := sn.Node.Status.Allocatable[name]; ok {
			q.Sub(alloc)
		}
		overhead[name] = q
	}
	emit(ch, nodeSystemOverheadDesc, sn, overhead)
	values := []string{sn.Node.Name}
	for _, k := range nodeLabelKeys {
		values = append(values, sn.Node.Labels[k])
	}
	values = append(values, nodeStatusValues(sn)...)
	ch <- prometheus.MustNewConstMetric(nodeLifetimeDesc, prometheus.GaugeValue,
		max(0, now.Sub(sn.Node.CreationTimestamp.Time).Seconds()), values...)
}

func sumLimits(pods []*corev1.Pod, include func(*corev1.Pod) bool) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || !include(p) {
			continue
		}
		addInto(out, resourcehelper.PodLimits(p, resourcehelper.PodResourcesOptions{}))
	}
	return out
}
