package state

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

var (
	clusterUtilizationDesc = prometheus.NewDesc(metricsNamespace+"_cluster_utilization_percent",
		"Utilization of allocatable resources by pod requests", []string{"resource_type"}, nil)
	nodePoolCostDesc = prometheus.NewDesc(metricsNamespace+"_nodepools_cost_total",
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
