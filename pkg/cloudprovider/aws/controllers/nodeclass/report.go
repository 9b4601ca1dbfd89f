package nodeclass

import (
	"encoding/json"
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// Event reasons of discovery failures. Not-found conditions are reported
// with the condition's reason (SubnetsNotFound, AMINotFound, ...).
const (
	ReasonAMIResolutionFailed                 = "AMIResolutionFailed"
	ReasonSubnetResolutionFailed              = "SubnetResolutionFailed"
	ReasonSecurityGroupResolutionFailed       = "SecurityGroupResolutionFailed"
	ReasonInstanceProfileLookupFailed         = "InstanceProfileLookupFailed"
	ReasonInstanceProfileCreationFailed       = "InstanceProfileCreationFailed"
	ReasonCapacityReservationResolutionFailed = "CapacityReservationResolutionFailed"
	// Some of a selector's terms matched nothing while others matched: the
	// condition stays True and says which; a Warning event too.
	ReasonSubnetTermsUnmatched        = "SubnetSelectorTermsUnmatched"
	ReasonSecurityGroupTermsUnmatched = "SecurityGroupSelectorTermsUnmatched"
	ReasonAMITermsUnmatched           = "AMISelectorTermsUnmatched"
)

// maxEventNote is the longest note events.k8s.io/v1 accepts.
const maxEventNote = 1024

// reporter writes the steps' conditions on the controller's clock and
// publishes the events that go with them.
type reporter struct {
	recorder events.EventRecorder
	clock    clock.PassiveClock
}

func (r reporter) conditions(nodeClass *awsv1.EC2NodeClass) karpv1.ConditionSet {
	return nodeClass.StatusConditions().WithClock(r.clock)
}

// notReady sets condition False and, when that changed it, publishes a
// Warning event with the same reason and message.
func (r reporter) notReady(nodeClass *awsv1.EC2NodeClass, condition, reason, message string) {
	if r.conditions(nodeClass).SetFalse(condition, reason, message) {
		r.warn(nodeClass, reason, message)
	}
}

// ready sets condition True with message (empty when all is well) and,
// when a non-empty message is new, publishes a Warning event with reason.
func (r reporter) ready(nodeClass *awsv1.EC2NodeClass, condition, reason, message string) {
	if r.conditions(nodeClass).SetTrueWithReason(condition, condition, message) && message != "" {
		r.warn(nodeClass, reason, message)
	}
}

// failed records a discovery error on condition: with have things resolved
// before, the condition keeps its status and says it is keeping them;
// otherwise it is Unknown with the error. A Warning event reports it, and
// the error is returned so the reconcile is retried with backoff.
func (r reporter) failed(nodeClass *awsv1.EC2NodeClass, condition, reason string, have int, what string, err error) (reconcile.Result, error) {
	conditions := r.conditions(nodeClass)
	message := stableMessage(err)
	if have > 0 && conditions.IsTrue(condition) {
		conditions.SetTrueWithReason(condition, condition, fmt.Sprintf("%s; keeping the %d %s resolved before", message, have, what))
	} else {
		conditions.SetUnknownWithReason(condition, reason, message)
	}
	r.warn(nodeClass, reason, message)
	return reconcile.Result{}, err
}

// requestID matches the per-call parts of an AWS SDK error's text.
var requestID = regexp.MustCompile(`(?i)(RequestID|HostID): [^,\s]*,? ?`)

// stableMessage is err's text without the request IDs the SDK puts in it,
// so the same failure repeated writes the same condition message: a
// message that changed on every try would rewrite the status, and the
// write would wake the controller at once, a hot loop for as long as an
// API is down.
func stableMessage(err error) string {
	return requestID.ReplaceAllString(err.Error(), "")
}

func (r reporter) warn(nodeClass *awsv1.EC2NodeClass, reason, message string) {
	if r.recorder == nil {
		return
	}
	if len(message) > maxEventNote {
		message = message[:maxEventNote-3] + "..."
	}
	r.recorder.Eventf(nodeClass, nil, corev1.EventTypeWarning, reason, "Resolve", "%s", message)
}

// terms renders selector terms as the JSON users wrote them, for messages
// naming the selector that matched nothing.
func terms(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(raw)
}
