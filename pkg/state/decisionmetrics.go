package state

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/metrics"
)

// The scheduling-decision metrics measure from when the provisioner first
// saw a pending pod (its trigger, upstream's "ack") to the first
// provisioning pass that decided about it: placed on a node, on a new
// NodeClaim, or found unschedulable. Like the provisioning-time metrics,
// they start at a point in this process's memory.
var (
	// PodSchedulingDecisionDuration observes, once per pending pod, the
	// time from when the provisioner first saw it until its first
	// scheduling decision.
	PodSchedulingDecisionDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: metrics.Namespace, Subsystem: "pods", Name: "scheduling_decision_duration_seconds",
		Help:    "The time it takes for Karpenter to first try to schedule a pod after it's been seen.",
		Buckets: durationBuckets(),
	})

	podSchedulingUndecidedDesc = prometheus.NewDesc(metrics.Namespace+"_pods_provisioning_scheduling_undecided_time_seconds",
		"The time from when Karpenter has seen a pod without making a scheduling decision for the pod. Note: this calculated from a point in memory, not by the pod creation timestamp.",
		[]string{"name", "namespace"}, nil)
)

// durationBuckets are upstream Karpenter's duration buckets:
// controller-runtime's reconcile buckets up to a minute, then a few up to
// ten minutes for pods that wait long.
func durationBuckets() []float64 {
	return []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
		1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60, 120, 150, 300, 450, 600}
}

// schedulingAck is when the provisioner first saw a pending pod and
// whether a provisioning pass has decided about it since. The pod's UID
// tells a pod from a later one of the same name.
type schedulingAck struct {
	uid     types.UID
	at      time.Time
	decided bool
}

// AckPods records that the provisioner saw the pending pods, for those it
// had not seen yet. Bound pods are left out: there is nothing to decide
// for them.
func (c *Cluster) AckPods(pods ...*corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for _, pod := range pods {
		if pod.Spec.NodeName != "" {
			continue
		}
		key := client.ObjectKeyFromObject(pod)
		if ack, ok := c.acks[key]; ok && ack.uid == pod.UID {
			continue
		}
		c.acks[key] = schedulingAck{uid: pod.UID, at: now}
	}
}

// MarkSchedulingDecisions records that a provisioning pass decided about
// the pending pods (placed them or found them unschedulable). The first
// decision about a pod the provisioner saw is observed in
// karpenter_pods_scheduling_decision_duration_seconds; later ones are not.
func (c *Cluster) MarkSchedulingDecisions(pods ...*corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for _, pod := range pods {
		if pod.Spec.NodeName != "" {
			continue
		}
		key := client.ObjectKeyFromObject(pod)
		ack, ok := c.acks[key]
		if !ok || ack.uid != pod.UID {
			// Never seen by the trigger: decided, with nothing to measure from.
			c.acks[key] = schedulingAck{uid: pod.UID, at: now, decided: true}
			continue
		}
		if ack.decided {
			continue
		}
		PodSchedulingDecisionDuration.Observe(max(0, now.Sub(ack.at).Seconds()))
		ack.decided = true
		c.acks[key] = ack
	}
}

// emitUndecidedGauge sends, for a pending pod the provisioner saw but has
// not decided about yet, the time since it saw it. Called with c.mu held.
func (c *Cluster) emitUndecidedGauge(ch chan<- prometheus.Metric, key types.NamespacedName, pod *corev1.Pod, now time.Time) {
	if pod.Spec.NodeName != "" {
		return
	}
	ack, ok := c.acks[key]
	if !ok || ack.uid != pod.UID || ack.decided {
		return
	}
	ch <- prometheus.MustNewConstMetric(podSchedulingUndecidedDesc, prometheus.GaugeValue, max(0, now.Sub(ack.at).Seconds()), pod.Name, pod.Namespace)
}
