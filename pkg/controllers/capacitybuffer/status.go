package capacitybuffer

import (
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1beta1"
	"github.com/karp-autoscaler/karp/pkg/state/buffers"
)

// ReasonProvisioningPending (karp's own reason) is Provisioning Unknown:
// the buffer is ready but no provisioning pass has placed its pods as they
// are now.
const ReasonProvisioningPending = "ProvisioningPending"

// setCondition sets a condition at the buffer's generation; its
// transition time moves only when its status does.
func (c *Controller) setCondition(cb *autoscalingv1beta1.CapacityBuffer, conditionType string, status metav1.ConditionStatus, reason, message string) {
	apimeta.SetStatusCondition(&cb.Status.Conditions, metav1.Condition{Type: conditionType, Status: status, Reason: reason,
		Message: message, ObservedGeneration: cb.Generation, LastTransitionTime: metav1.NewTime(c.clock.Now())})
}

// setProvisioning sets the Provisioning condition from ReadyForProvisioning,
// the replicas and where the provisioner's last pass placed the pods.
func (c *Controller) setProvisioning(cb *autoscalingv1beta1.CapacityBuffer) {
	status, reason, message := provisioning(cb, c.store)
	c.setCondition(cb, autoscalingv1beta1.ConditionTypeProvisioning, status, reason, message)
}

// provisioning decides the Provisioning condition (upstream Karpenter's
// reasons, and ProvisioningPending until a pass placed the pods).
func provisioning(cb *autoscalingv1beta1.CapacityBuffer, store *buffers.Store) (metav1.ConditionStatus, string, string) {
	ready := apimeta.FindStatusCondition(cb.Status.Conditions, autoscalingv1beta1.ConditionTypeReadyForProvisioning)
	if ready == nil || ready.Status != metav1.ConditionTrue {
		msg := "Buffer is not ReadyForProvisioning"
		if ready != nil {
			msg += ": " + ready.Message
		}
		return metav1.ConditionFalse, autoscalingv1beta1.ReasonNotReadyForProvisioning, msg
	}
	replicas := int32(0)
	if cb.Status.Replicas != nil {
		replicas = *cb.Status.Replicas
	}
	if replicas == 0 {
		return metav1.ConditionFalse, autoscalingv1beta1.ReasonBufferEmpty, "Buffer has zero desired replicas"
	}
	o, ok := store.Outcome(client.ObjectKeyFromObject(cb))
	if !ok || int32(o.Existing+o.New+o.Unplaced) != replicas {
		return metav1.ConditionUnknown, ReasonProvisioningPending, fmt.Sprintf("Waiting for a provisioning pass to place the %d virtual pods", replicas)
	}
	if o.New > 0 || o.Unplaced > 0 {
		return metav1.ConditionFalse, autoscalingv1beta1.ReasonRequiresNewCapacity,
			fmt.Sprintf("%d/%d virtual pods required new capacity, %d fit nowhere", o.New, replicas, o.Unplaced)
	}
	return metav1.ConditionTrue, autoscalingv1beta1.ReasonFitsExistingCapacity, fmt.Sprintf("All %d virtual pods fit on existing capacity", replicas)
}
