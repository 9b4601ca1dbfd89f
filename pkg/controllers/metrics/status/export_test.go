package status

import (
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// NewNodeClaimTransitions returns the NodeClaim transition reconciler
// with NodeClaim labels labelKeys, and its counter and histogram.
func NewNodeClaimTransitions(recorder events.EventRecorder, labelKeys []string) (reconcile.ObjectReconciler[*karpv1.NodeClaim], *prometheus.CounterVec, *prometheus.HistogramVec) {
	extra := make([]string, 0, len(labelKeys))
	for _, k := range labelKeys {
		extra = append(extra, prometheusLabel(k))
	}
	c := &transitionController[*karpv1.NodeClaim]{kind: "NodeClaim", labelKeys: labelKeys,
		newObject:  func() *karpv1.NodeClaim { return &karpv1.NodeClaim{} },
		conditions: func(nc *karpv1.NodeClaim) []metav1.Condition { return nc.Status.Conditions },
		metrics:    newTransitionMetrics("nodeclaim", extra), recorder: recorder, lastObserve: map[string][]metav1.Condition{}}
	return c, c.metrics.total, c.metrics.duration
}
