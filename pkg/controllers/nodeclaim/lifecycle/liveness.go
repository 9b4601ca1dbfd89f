package lifecycle

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/metrics"
)

const (
	// LaunchTimeout is how long a NodeClaim may stay unlaunched after creation.
	LaunchTimeout = 5 * time.Minute
	// RegistrationTimeout is how long a launched NodeClaim may wait for its Node.
	RegistrationTimeout = 15 * time.Minute
)

// liveness deletes NodeClaims that never launch or never register, so their
// pods go back to the provisioner.
type liveness struct {
	kubeClient client.Client
	clock      clock.Clock
	recorder   events.EventRecorder
	health     *poolHealth
}

func (l *liveness) reconcile(ctx context.Context, nodeClaim *karpv1.NodeClaim, _ *pass) (reconcile.Result, bool, error) {
	conditions := nodeClaim.StatusConditions()
	if conditions.IsTrue(karpv1.ConditionTypeRegistered) {
		return reconcile.Result{}, false, nil
	}
	now := l.clock.Now()
	if !conditions.IsTrue(karpv1.ConditionTypeLaunched) {
		deadline := nodeClaim.CreationTimestamp.Add(LaunchTimeout)
		if now.Before(deadline) {
			return requeueAt(deadline.Sub(now)), false, nil
		}
		return l.expire(ctx, nodeClaim, ReasonLaunchTimeout, metrics.ReasonLaunchTimeout, LaunchTimeout)
	}
	launched := conditions.Get(karpv1.ConditionTypeLaunched).LastTransitionTime.Time
	deadline := launched.Add(RegistrationTimeout)
	if now.Before(deadline) {
		return requeueAt(deadline.Sub(now)), false, nil
	}
	return l.expire(ctx, nodeClaim, ReasonRegistrationTimeout, metrics.ReasonRegistrationTimeout, RegistrationTimeout)
}

func (l *liveness) expire(ctx context.Context, nodeClaim *karpv1.NodeClaim, event, reason string, ttl time.Duration) (reconcile.Result, bool, error) {
	l.recorder.Eventf(nodeClaim, nil, corev1.EventTypeWarning, event, "Delete",
		"NodeClaim %s did not %s within %s; deleting it", nodeClaim.Name, phaseOf(reason), ttl)
	log.FromContext(ctx).Info("deleting nodeclaim", "reason", reason, "ttl", ttl.String())
	// The pool's health is informational: failing to record it must not
	// keep a stuck NodeClaim alive.
	if err := l.health.record(ctx, nodeClaim, false); err != nil {
		log.FromContext(ctx).Error(err, "recording nodepool registration health")
	}
	return reconcile.Result{}, true, deleteNodeClaim(ctx, l.kubeClient, nodeClaim)
}

func phaseOf(reason string) string {
	if reason == metrics.ReasonLaunchTimeout {
		return "launch"
	}
	return "register"
}
