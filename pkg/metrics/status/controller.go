package status

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/karp-autoscaler/karp/pkg/conflict"
)

// Controller remembers the conditions it last saw on each object of one
// kind and, when a condition's status changes, counts the transition,
// observes how long the previous status lasted and records an event named
// after the condition type; when an object it saw terminating is gone, it
// observes how long the termination took (from the deletion timestamp).
// This is what upstream's operatorpkg status controller does.
// Observations are best effort: changes between two reconciles are seen
// as one, and an object deleted without ever being seen terminating (no
// finalizer) is not timed.
type Controller struct {
	kind     Kind
	reader   client.Reader
	clock    clock.PassiveClock
	recorder events.EventRecorder
	metrics  *Metrics

	mu   sync.Mutex
	seen map[types.NamespacedName]observed
}

// observed is what the controller last saw of one object.
type observed struct {
	conditions []metav1.Condition
	labels     []string
	deleted    *metav1.Time
}

var _ reconcile.Reconciler = (*Controller)(nil)

// NewController returns kind's controller reading objects from reader and
// recording into metrics; recorder (may be nil) receives the transition
// events.
func NewController(reader client.Reader, clk clock.PassiveClock, recorder events.EventRecorder, kind Kind, metrics *Metrics) *Controller {
	return &Controller{kind: kind, reader: reader, clock: clk, recorder: recorder, metrics: metrics, seen: map[types.NamespacedName]observed{}}
}

// Name is "<kind>.statusmetrics".
func (c *Controller) Name() string { return c.kind.name + ".statusmetrics" }

// Register watches the kind.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).For(c.kind.newObject()).Complete(conflict.Requeue(c))
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims;nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.k8s.aws,resources=ec2nodeclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile compares the object's conditions with the last seen ones, or
// times the termination of an object that is gone.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj := c.kind.newObject()
	if err := c.reader.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			c.gone(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("getting %s: %w", c.kind.name, err)
	}
	current := c.kind.conditions(obj)
	labels := c.kind.labelValues(obj)
	c.mu.Lock()
	previous := c.seen[req.NamespacedName].conditions
	c.seen[req.NamespacedName] = observed{conditions: append([]metav1.Condition(nil), current...), labels: labels,
		deleted: obj.GetDeletionTimestamp()}
	c.mu.Unlock()
	for _, cond := range current {
		old := find(previous, cond.Type)
		if old != nil && old.Status == cond.Status {
			continue
		}
		c.metrics.observeTransition(cond, old, labels)
		if old == nil || c.recorder == nil {
			// First sight of the condition (or of the object, after a
			// restart): counted, as upstream does, but no duration and
			// no event.
			continue
		}
		note := fmt.Sprintf("Status condition transitioned, Type: %s, Status: %s -> %s, Reason: %s", cond.Type, old.Status, cond.Status, cond.Reason)
		if cond.Message != "" {
			note += ", Message: " + cond.Message
		}
		c.recorder.Eventf(obj, nil, corev1.EventTypeNormal, cond.Type, "StatusCondition", "%s", note)
	}
	return reconcile.Result{}, nil
}

// gone forgets an object and, if it was last seen terminating, observes
// how long its termination took.
func (c *Controller) gone(key types.NamespacedName) {
	c.mu.Lock()
	last, ok := c.seen[key]
	delete(c.seen, key)
	c.mu.Unlock()
	if !ok || last.deleted == nil {
		return
	}
	c.metrics.observeTermination(max(0, c.clock.Since(last.deleted.Time).Seconds()), last.labels)
}

func find(conditions []metav1.Condition, conditionType string) *metav1.Condition {
	for i := range conditions {
		if conditions[i].Type == conditionType {
			return &conditions[i]
		}
	}
	return nil
}

// Registrar registers kinds' status metrics with a registry and their
// controllers with the manager: one entry of a controller list.
type Registrar struct {
	reg      prometheus.Registerer
	clock    clock.PassiveClock
	recorder events.EventRecorder
	kinds    []Kind
}

// NewRegistrar returns the registrar of kinds' metrics into reg;
// recorder receives the condition transition events.
func NewRegistrar(reg prometheus.Registerer, clk clock.PassiveClock, recorder events.EventRecorder, kinds ...Kind) *Registrar {
	return &Registrar{reg: reg, clock: clk, recorder: recorder, kinds: kinds}
}

// Name names the registrar in the controller list ("ec2nodeclass.statusmetrics"
// for one kind).
func (r *Registrar) Name() string {
	names := make([]string, len(r.kinds))
	for i, k := range r.kinds {
		names[i] = k.name
	}
	return strings.Join(names, ",") + ".statusmetrics"
}

// Register registers each kind's collectors (over the manager's cache)
// and controller.
func (r *Registrar) Register(ctx context.Context, mgr manager.Manager) error {
	for _, kind := range r.kinds {
		m, err := RegisterMetrics(r.reg, mgr.GetClient(), r.clock, kind)
		if err != nil {
			return fmt.Errorf("registering %s status metrics: %w", kind.name, err)
		}
		if err := NewController(mgr.GetClient(), r.clock, r.recorder, kind, m).Register(ctx, mgr); err != nil {
			return err
		}
	}
	return nil
}
