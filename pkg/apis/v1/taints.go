package v1

import corev1 "k8s.io/api/core/v1"

// Taint keys karp manages.
const (
	// DisruptedTaintKey marks a node karp is disrupting; nothing new schedules there.
	DisruptedTaintKey = Group + "/disrupted"
	// UnregisteredTaintKey is on a Node from kubelet start until karp synced
	// its labels and taints at registration.
	UnregisteredTaintKey = Group + "/unregistered"
	// BatchHoldTaintKey (karp's own, not upstream's) keeps a new node of a
	// multi-node provisioning batch from the kube-scheduler from
	// registration until the batch's other nodes are initialized too, or a
	// bound has passed. The batch's pods are then placed in one pass, as
	// planned, instead of retrying (and backing off) each time one of the
	// batch's nodes turns Ready.
	BatchHoldTaintKey = "karp.sh/batch-hold"
	// ProvisioningBatchAnnotationKey on a NodeClaim names the provisioning
	// batch it was created in, when that batch created more than one.
	ProvisioningBatchAnnotationKey = "karp.sh/provisioning-batch"
)

var (
	// DisruptedNoScheduleTaint is added before a node is disrupted.
	DisruptedNoScheduleTaint = corev1.Taint{Key: DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}
	// UnregisteredNoExecuteTaint is expected on new Nodes until registration.
	UnregisteredNoExecuteTaint = corev1.Taint{Key: UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}
	// BatchHoldNoScheduleTaint is put on at registration and lifted by the
	// provisioner's batch controller.
	BatchHoldNoScheduleTaint = corev1.Taint{Key: BatchHoldTaintKey, Effect: corev1.TaintEffectNoSchedule}
)

// IsBatchHoldTaint reports whether t is karp's batch-hold taint.
func IsBatchHoldTaint(t corev1.Taint) bool { return t.Key == BatchHoldTaintKey }

// IsDisruptingTaint reports whether t is karp's disruption taint.
func IsDisruptingTaint(t corev1.Taint) bool {
	return t.Key == DisruptedTaintKey && t.Effect == corev1.TaintEffectNoSchedule
}
