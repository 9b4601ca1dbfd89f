package state

import (
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/metrics"
)

// podStateLabels are upstream's labels of karpenter_pods_state.
var podStateLabels = []string{"name", "namespace", "owner", "node", "nodepool", "zone", "arch", "capacity_type", "instance_type", "phase",
	"scheduled", "ready", "managed"}

var podStateDesc = prometheus.NewDesc(metrics.Namespace+"_pods_state",
	"Pod state is the current state of pods. This metric can be used several ways as it is labeled by the pod name, namespace, owner, node, whether the pod is scheduled, nodepool name, zone, architecture, capacity type, instance type, pod phase, pod readiness, and whether the node is Karpenter-managed.",
	podStateLabels, nil)

// PodStartupDuration observes, once per pod, the time from its creation
// until it became Ready. Pods that were already Ready when this process
// started are not observed, so a restart does not replay history.
var PodStartupDuration = prometheus.NewSummary(prometheus.SummaryOpts{
	Namespace: metrics.Namespace, Subsystem: "pods", Name: "startup_duration_seconds",
	Help:       "The time from pod creation until the pod is running.",
	Objectives: map[float64]float64{0.0: 0.01, 0.5: 0.05, 0.9: 0.01, 0.99: 0.001, 1: 0.001},
})

// dynamicResourcesLabels names whether a pod asks for DRA resource claims.
var dynamicResourcesLabels = []string{"dynamic_resources"}

// PodBoundDuration observes, once per pod the view saw unbound, the time
// from its creation until it was bound to a node.
var PodBoundDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Namespace: metrics.Namespace, Subsystem: "pods", Name: "bound_duration_seconds",
	Help:    "The time from pod creation until the pod is bound.",
	Buckets: prometheus.ExponentialBuckets(0.5, 2, 12),
}, dynamicResourcesLabels)

var (
	podUnboundDesc = prometheus.NewDesc(metrics.Namespace+"_pods_unbound_time_seconds",
		"The time from pod creation until the pod is bound.", []string{"name", "namespace", "dynamic_resources"}, nil)
	podUnstartedDesc = prometheus.NewDesc(metrics.Namespace+"_pods_unstarted_time_seconds",
		"The time from pod creation until the pod is running.", []string{"name", "namespace"}, nil)
)

func dynamicResources(pod *corev1.Pod) string {
	if len(pod.Spec.ResourceClaims) > 0 {
		return "true"
	}
	return "false"
}

// observeBound records how long the pod waited to be bound: until its
// PodScheduled condition turned True, else until now. Called with c.mu
// held, when the view sees the pod go from unbound to bound.
func (c *Cluster) observeBound(pod *corev1.Pod) {
	at := c.clock.Now()
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionTrue && !cond.LastTransitionTime.IsZero() {
			at = cond.LastTransitionTime.Time
		}
	}
	PodBoundDuration.WithLabelValues(dynamicResources(pod)).Observe(max(0, at.Sub(pod.CreationTimestamp.Time).Seconds()))
	c.observeProvisioningBound(pod, at)
}

// observeStartup records the pod's startup duration the first time the
// view sees it Ready. Called with c.mu held.
func (c *Cluster) observeStartup(pod *corev1.Pod) {
	if c.started[pod.UID] {
		return
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type != corev1.PodReady || cond.Status != corev1.ConditionTrue {
			continue
		}
		c.started[pod.UID] = true
		if cond.LastTransitionTime.Time.Before(c.createdAt) {
			return
		}
		PodStartupDuration.Observe(cond.LastTransitionTime.Sub(pod.CreationTimestamp.Time).Seconds())
		c.observeProvisioningStartup(pod, cond.LastTransitionTime.Time)
		return
	}
}

// collectPods emits karpenter_pods_state for every pod the view holds.
func (c *Cluster) collectPods(ch chan<- prometheus.Metric) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	now := c.clock.Now()
	// No order: the registry sorts what it gathers.
	for key, pod := range c.pods {
		var labels map[string]string
		if node, ok := c.nodes[pod.Spec.NodeName]; ok {
			labels = node.Labels
		}
		age := max(0, now.Sub(pod.CreationTimestamp.Time).Seconds())
		if pod.Spec.NodeName == "" {
			ch <- prometheus.MustNewConstMetric(podUnboundDesc, prometheus.GaugeValue, age, pod.Name, pod.Namespace, dynamicResources(pod))
		}
		if !c.started[pod.UID] && pod.Status.Phase != corev1.PodRunning {
			ch <- prometheus.MustNewConstMetric(podUnstartedDesc, prometheus.GaugeValue, age, pod.Name, pod.Namespace)
		}
		c.emitProvisioningGauges(ch, pod, now)
		c.emitUndecidedGauge(ch, key, pod, now)
		ch <- prometheus.MustNewConstMetric(podStateDesc, prometheus.GaugeValue, 1,
			pod.Name, pod.Namespace, owner(pod), pod.Spec.NodeName, labels[karpv1.NodePoolLabelKey],
			labels[corev1.LabelTopologyZone], labels[corev1.LabelArchStable], labels[karpv1.CapacityTypeLabelKey],
			labels[corev1.LabelInstanceTypeStable], string(pod.Status.Phase),
			strconv.FormatBool(pod.Spec.NodeName != ""), strconv.FormatBool(podReady(pod)),
			strconv.FormatBool(labels[karpv1.NodePoolLabelKey] != ""))
	}
}

func podReady(pod *corev1.Pod) bool {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// owner renders the pod's controller as <kind>/<name>, or "".
func owner(pod *corev1.Pod) string {
	for _, ref := range pod.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			return strings.ToLower(ref.Kind) + "/" + ref.Name
		}
	}
	if len(pod.OwnerReferences) > 0 {
		ref := pod.OwnerReferences[0]
		return strings.ToLower(ref.Kind) + "/" + ref.Name
	}
	return ""
}
