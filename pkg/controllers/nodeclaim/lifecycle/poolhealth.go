package lifecycle

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/state/nodepoolhealth"
)

// ReasonRegistrationFailed is NodeRegistrationHealthy's reason when
// launched NodeClaims of the pool did not register in time.
const ReasonRegistrationFailed = "RegistrationFailed"

// poolHealth feeds each NodeClaim's outcome (registered, or deleted by
// liveness) into its NodePool's tracker. It writes nothing: the nodepool
// registrationhealth controller, told by the State, is the one writer of
// the NodePool's NodeRegistrationHealthy condition, so NodeClaims
// registering at once never race each other on the NodePool's status.
type poolHealth struct {
	kubeClient client.Client
	state      *nodepoolhealth.State
}

// record stores the outcome of the NodeClaim in its NodePool's tracker: a
// registration, or a failure carrying the Launched condition's reason when
// the launch failed (else RegistrationFailed). A NodeClaim without a
// NodePool is ignored.
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
	// A tracker empty since the process started agrees with the stored
	// condition first, so one outcome does not flip a settled verdict.
	p.state.Seed(nodePool.UID, nodepoolhealth.StoredStatus(nodePool))
	outcome := nodepoolhealth.Outcome{Success: success}
	if !success {
		outcome.Reason, outcome.Message = ReasonRegistrationFailed, "Failed to register node"
		if launched := nodeClaim.StatusConditions().Get(karpv1.ConditionTypeLaunched); launched != nil &&
			launched.Status != metav1.ConditionTrue && launched.Reason != "" {
			outcome.Reason, outcome.Message = launched.Reason, launched.Message
		}
	}
	p.state.Record(nodePool.UID, name, outcome)
	return nil
}
