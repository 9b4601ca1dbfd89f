package v1

import corev1 "k8s.io/api/core/v1"

// Taint keys karp manages.
const (
	// DisruptedTaintKey marks a node karp is disrupting; nothing new schedules there.
	DisruptedTaintKey = Group + "/disrupted"
	// UnregisteredTaintKey is on a Node from kubelet start until karp synced
	// its labels and taints at registration.
	UnregisteredTaintKey = Group + "/unregistered"
)

var (
	// DisruptedNoScheduleTaint is added before a node is disrupted.
	DisruptedNoScheduleTaint = corev1.Taint{Key: DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}
	// UnregisteredNoExecuteTaint is expected on new Nodes until registration.
	UnregisteredNoExecuteTaint = corev1.Taint{Key: UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}
)

// IsDisruptingTaint reports whether t is karp's disruption taint.
func IsDisruptingTaint(t corev1.Taint) bool {
	return t.Key == DisruptedTaintKey && t.Effect == corev1.TaintEffectNoSchedule
}
