package instancetype

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/karp-autoscaler/karp/pkg/metrics"
)

// Collector exports the vCPUs and memory EC2 reports for every instance
// type the provider knows, with upstream's names
// (karpenter_cloudprovider_instance_type_cpu_cores and
// karpenter_cloudprovider_instance_type_memory_bytes). The samples are
// built from the provider's current data when scraped.
type Collector struct {
	provider    *Provider
	cpu, memory *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns the provider's collector; register it once.
func NewCollector(provider *Provider) *Collector {
	labels := []string{metrics.InstanceTypeLabel}
	return &Collector{
		provider: provider,
		cpu: prometheus.NewDesc(prometheus.BuildFQName(metrics.Namespace, metrics.CloudProviderSubsystem, "instance_type_cpu_cores"),
			"VCPUs cores for a given instance type.", labels, nil),
		memory: prometheus.NewDesc(prometheus.BuildFQName(metrics.Namespace, metrics.CloudProviderSubsystem, "instance_type_memory_bytes"),
			"Memory, in bytes, for a given instance type.", labels, nil),
	}
}

// Describe sends the two metrics' descriptions.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.cpu
	ch <- c.memory
}

// Collect sends every known type's vCPUs and raw memory.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.provider.mu.RLock()
	defer c.provider.mu.RUnlock()
	for name, info := range c.provider.infos {
		ch <- prometheus.MustNewConstMetric(c.cpu, prometheus.GaugeValue, float64(deref(info.VCpuInfo.DefaultVCpus)), name)
		ch <- prometheus.MustNewConstMetric(c.memory, prometheus.GaugeValue, float64(deref(info.MemoryInfo.SizeInMiB))*1024*1024, name)
	}
}
