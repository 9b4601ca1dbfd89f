package state

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/metrics"
)

// The provisioning-time metrics measure from when the provisioner first
// placed a pending pod (its first nomination, upstream's "first thinks the
// pod can schedule"), a point in this process's memory rather than the
// pod's creation.
var (
	// PodProvisioningBoundDuration observes, once per placed pod, the time
	// from its placement until it was bound.
	PodProvisioningBoundDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: metrics.Namespace, Subsystem: "pods", Name: "provisioning_bound_duration_seconds",
		Help:    "The time from when Karpenter first thinks the pod can schedule until it binds. Note: this calculated from a point in memory, not by the pod creation timestamp.",
		Buckets: prometheus.ExponentialBuckets(0.5, 2, 12),
	}, dynamicResourcesLabels)
	// PodProvisioningStartupDuration observes, once per placed pod, the
	// time from its placement until it was Ready.
	PodProvisioningStartupDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: metrics.Namespace, Subsystem: "pods", Name: "provisioning_startup_duration_seconds",
		Help:    "The time from when Karpenter first thinks the pod can schedule until the pod is running. Note: this calculated from a point in memory, not by the pod creation timestamp.",
		Buckets: prometheus.ExponentialBuckets(0.5, 2, 12),
	})

	podProvisioningUnboundDesc = prometheus.NewDesc(metrics.Namespace+"_pods_provisioning_unbound_time_seconds",
		"The time from when Karpenter first thinks the pod can schedule until it binds. Note: this calculated from a point in memory, not by the pod creation timestamp.",
		[]string{"name", "namespace", "dynamic_resources"}, nil)
	podProvisioningUnstartedDesc = prometheus.NewDesc(metrics.Namespace+"_pods_provisioning_unstarted_time_seconds",
		"The time from when Karpenter first thinks the pod can schedule until the pod is running. Note: this calculated from a point in memory, not by the pod creation timestamp.",
		[]string{"name", "namespace"}, nil)
)

// markDecided records the first placement of a pending pod. Called with
// c.mu held.
func (c *Cluster) markDecided(pod *corev1.Pod) {
	if pod.Spec.NodeName != "" {
		return
	}
	if _, ok := c.decided[pod.UID]; !ok {
		c.decided[pod.UID] = c.now()
	}
}

// observeProvisioningBound records how long a placed pod waited from its
// placement to bound (at). Called with c.mu held.
func (c *Cluster) observeProvisioningBound(pod *corev1.Pod, at time.Time) {
	if decided, ok := c.decided[pod.UID]; ok {
		PodProvisioningBoundDuration.WithLabelValues(dynamicResources(pod)).Observe(max(0, at.Sub(decided).Seconds()))
	}
}

// observeProvisioningStartup records how long a placed pod waited from its
// placement to Ready (at). Called with c.mu held.
func (c *Cluster) observeProvisioningStartup(pod *corev1.Pod, at time.Time) {
	if decided, ok := c.decided[pod.UID]; ok {
		PodProvisioningStartupDuration.Observe(max(0, at.Sub(decided).Seconds()))
	}
}

// emitProvisioningGauges sends, for a placed pod not yet bound or
// started, the time since its placement. Called with c.mu held.
func (c *Cluster) emitProvisioningGauges(ch chan<- prometheus.Metric, pod *corev1.Pod, now time.Time) {
	decided, ok := c.decided[pod.UID]
	if !ok {
		return
	}
	waited := max(0, now.Sub(decided).Seconds())
	if pod.Spec.NodeName == "" {
		ch <- prometheus.MustNewConstMetric(podProvisioningUnboundDesc, prometheus.GaugeValue, waited, pod.Name, pod.Namespace, dynamicResources(pod))
	}
	if !c.started[pod.UID] {
		ch <- prometheus.MustNewConstMetric(podProvisioningUnstartedDesc, prometheus.GaugeValue, waited, pod.Name, pod.Namespace)
	}
}
