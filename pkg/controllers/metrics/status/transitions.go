package status

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// transitionMetrics are one kind's transition counter and duration
// histogram, plus the deprecated kind-less pair shared by all kinds.
type transitionMetrics struct {
	total, deprecatedTotal       *prometheus.CounterVec
	duration, deprecatedDuration *prometheus.HistogramVec
}

// durationBuckets are upstream's: 0.5s to 8192s.
var durationBuckets = prometheus.ExponentialBuckets(0.5, 2, 15)

var (
	deprecatedTransitionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "status_condition", Name: "transitions_total",
		Help: "The count of transitions of a given object, type and status.",
	}, []string{"type", "status", "reason", "group", "kind"})
	deprecatedTransitionSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "status_condition", Name: "transition_seconds",
		Help:    "The amount of time a condition was in a given state before transitioning. e.g. Alarm := P99(Updated=False) > 5 minutes",
		Buckets: durationBuckets,
	}, []string{"type", "status", "group", "kind"})
)

func newTransitionMetrics(kind string, extra []string) *transitionMetrics {
	subsystem := kind + "_status_condition"
	return &transitionMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "transitions_total",
			Help: "The count of transitions of a given object, type and status.",
		}, append([]string{"type", "status", "reason"}, extra...)),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "transition_seconds",
			Help:    "The amount of time a condition was in a given state before transitioning. e.g. Alarm := P99(Updated=False) > 5 minutes",
			Buckets: durationBuckets,
		}, append([]string{"type", "status"}, extra...)),
		deprecatedTotal:    deprecatedTransitionsTotal,
		deprecatedDuration: deprecatedTransitionSeconds,
	}
}

func (m *transitionMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.total, m.duration, m.deprecatedTotal, m.deprecatedDuration}
}

// conditioned is a cluster-scoped object with status conditions.
type conditioned interface {
	client.Object
	*karpv1.NodeClaim | *karpv1.NodePool
}

// transitionController remembers the conditions it last saw on each object
// of one kind and, when a condition's status changes, counts the
// transition, observes how long the previous status lasted and records an
// event named after the condition type, as upstream's operatorpkg status
// controller does. Observations are best effort: changes between two
// reconciles are seen as one.
type transitionController[T conditioned] struct {
	kind        string
	newObject   func() T
	conditions  func(T) []metav1.Condition
	labelKeys   []string
	metrics     *transitionMetrics
	recorder    events.EventRecorder
	mu          sync.Mutex
	lastObserve map[string][]metav1.Condition
}

// Name is "<kind>.statusmetrics".
func (c *transitionController[T]) Name() string { return strings.ToLower(c.kind) + ".statusmetrics" }

// Register watches the kind.
func (c *transitionController[T]) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		For(c.newObject()).
		Complete(reconcile.AsReconciler(mgr.GetClient(), c))
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims;nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile compares the object's conditions with the last seen ones.
func (c *transitionController[T]) Reconcile(ctx context.Context, obj T) (reconcile.Result, error) {
	current := c.conditions(obj)
	c.mu.Lock()
	previous := c.lastObserve[obj.GetName()]
	if obj.GetDeletionTimestamp() != nil {
		delete(c.lastObserve, obj.GetName())
	} else {
		c.lastObserve[obj.GetName()] = append([]metav1.Condition(nil), current...)
	}
	c.mu.Unlock()
	extra := make([]string, 0, len(c.labelKeys))
	for _, k := range c.labelKeys {
		extra = append(extra, obj.GetLabels()[k])
	}
	for _, cond := range current {
		old := meta(previous, cond.Type)
		if old != nil && old.Status == cond.Status {
			continue
		}
		c.metrics.total.WithLabelValues(append([]string{cond.Type, string(cond.Status), cond.Reason}, extra...)...).Inc()
		c.metrics.deprecatedTotal.WithLabelValues(cond.Type, string(cond.Status), cond.Reason, karpv1.Group, c.kind).Inc()
		if old == nil {
			// First sight of the condition (or of the object, after a
			// restart): counted, as upstream does, but no duration.
			continue
		}
		lasted := max(0, cond.LastTransitionTime.Sub(old.LastTransitionTime.Time).Seconds())
		c.metrics.duration.WithLabelValues(append([]string{old.Type, string(old.Status)}, extra...)...).Observe(lasted)
		c.metrics.deprecatedDuration.WithLabelValues(old.Type, string(old.Status), karpv1.Group, c.kind).Observe(lasted)
		if c.recorder != nil {
			note := fmt.Sprintf("Status condition transitioned, Type: %s, Status: %s -> %s, Reason: %s", cond.Type, old.Status, cond.Status, cond.Reason)
			if cond.Message != "" {
				note += ", Message: " + cond.Message
			}
			c.recorder.Eventf(obj, nil, corev1.EventTypeNormal, cond.Type, "StatusCondition", "%s", note)
		}
	}
	return reconcile.Result{}, nil
}

func meta(conditions []metav1.Condition, conditionType string) *metav1.Condition {
	for i := range conditions {
		if conditions[i].Type == conditionType {
			return &conditions[i]
		}
	}
	return nil
}
