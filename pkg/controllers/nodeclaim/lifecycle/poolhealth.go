package lifecycle

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/state/nodepoolhealth"
)

// ReasonRegistrationFailed is NodeRegistrationHealthy's reason when
// launched NodeClaims of the pool did not register in time.
const ReasonRegistrationFailed = "RegistrationFailed"

// poolHealth feeds each NodeClaim's outcome (registered, or deleted by
// liveness) into its NodePool's tracker and moves the NodePool's
// NodeRegistrationHealthy condition when the tracker's verdict changes.
// The condition is informational: it is not part of the NodePool's Ready.
type poolHealth struct {
	kubeClient client.Client
	clock      clock.Clock
	state      *nodepoolhealth.State
}

// record stores the outcome and patches the NodePool's condition: True
// when a registration leaves the pool healthy, False (with the Launched
// condition's reason when the launch failed) when a failure makes it
// unhealthy. A NodeClaim without a NodePool is ignored.
func (p *poolHealth) record(ctx context.Context, nodeClaim *karpv1.NodeClaim, success bool) error {
	if p == nil || p.state == nil {
		return nil
	}
	name := nodeClaim.Labels[karpv1.NodePoolLabelKey]
	if name == "" {
		return nil
	}
	nodePool := &karpv1.NodePool{}
	if err := p.kubeClient.Get(ctx, client.ObjectKey{Name: name}, nodePool); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("getting nodepool %s: %w", name, err)
	}
	p.state.Seed(nodePool.UID, statusOf(nodePool))
	verdict := p.state.StatusWith(nodePool.UID, success)
	p.state.Record(nodePool.UID, success)

	stored := nodePool.DeepCopy()
	conditions := nodePool.StatusConditions().WithClock(p.clock)
	changed := false
	switch {
	case success && verdict == nodepoolhealth.StatusHealthy:
		changed = conditions.SetTrue(karpv1.ConditionTypeNodeRegistrationHealthy)
	case !success && verdict == nodepoolhealth.StatusUnhealthy && !conditions.IsFalse(karpv1.ConditionTypeNodeRegistrationHealthy):
		reason, message := ReasonRegistrationFailed, "Failed to register node"
		if launched := nodeClaim.StatusConditions().Get(karpv1.ConditionTypeLaunched); launched != nil &&
			launched.Status != metav1.ConditionTrue && launched.Reason != "" {
			reason, message = launched.Reason, launched.Message
		}
		changed = conditions.SetFalse(karpv1.ConditionTypeNodeRegistrationHealthy, reason, message)
	}
	if !changed {
		return nil
	}
	if err := p.kubeClient.Status().Patch(ctx, nodePool, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("patching nodepool %s NodeRegistrationHealthy: %w", name, err))
	}
	return nil
}

// statusOf reads the stored condition as a verdict, to seed a tracker
// that has seen nothing since the process started.
func statusOf(nodePool *karpv1.NodePool) nodepoolhealth.Status {
	cond := nodePool.StatusConditions().Get(karpv1.ConditionTypeNodeRegistrationHealthy)
	switch {
	case cond == nil || cond.ObservedGeneration != nodePool.Generation:
		return nodepoolhealth.StatusUnknown
	case cond.Status == metav1.ConditionTrue:
		return nodepoolhealth.StatusHealthy
	case cond.Status == metav1.ConditionFalse:
		return nodepoolhealth.StatusUnhealthy
	default:
		return nodepoolhealth.StatusUnknown
	}
}
