package scheduling

import (
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
)

// Taints is the set of taints a node has or will have.
type Taints []corev1.Taint

// KnownEphemeralTaints are taints the control plane or karp put on nodes
// while they start. The one list serves scheduling and initialization: they
// are ignored when scheduling onto a node that is not initialized yet,
// because they are expected to go away, and a NodeClaim is not Initialized
// while its Node carries one.
var KnownEphemeralTaints = []corev1.Taint{
	{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
	{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: corev1.TaintEffectNoSchedule},
	{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute},
}

// KnownEphemeralTaintKeyPrefixes are key prefixes of ephemeral taints, of
// any value and effect: readiness.k8s.io/ is the Node Readiness
// Controller's, which lifts each taint once its rule's conditions hold.
var KnownEphemeralTaintKeyPrefixes = []string{"readiness.k8s.io/"}

// IsKnownEphemeralTaint reports whether taint is one of
// KnownEphemeralTaints or has one of KnownEphemeralTaintKeyPrefixes.
func IsKnownEphemeralTaint(taint corev1.Taint) bool {
	if matchesAny(taint, KnownEphemeralTaints) {
		return true
	}
	for _, prefix := range KnownEphemeralTaintKeyPrefixes {
		if strings.HasPrefix(taint.Key, prefix) && len(taint.Key) > len(prefix) {
			return true
		}
	}
	return false
}

// ToleratesPod returns an error naming the first NoSchedule or NoExecute
// taint the tolerations do not tolerate. PreferNoSchedule taints are
// preferences and never block.
func (t Taints) ToleratesPod(tolerations []corev1.Toleration) error {
	for i := range t {
		taint := &t[i]
		if taint.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !Tolerates(tolerations, taint) {
			return fmt.Errorf("taint %s not tolerated", taint.ToString())
		}
	}
	return nil
}

// HasPreferNoSchedule reports whether some taint has effect PreferNoSchedule.
func (t Taints) HasPreferNoSchedule() bool {
	for i := range t {
		if t[i].Effect == corev1.TaintEffectPreferNoSchedule {
			return true
		}
	}
	return false
}

// Tolerates reports whether any toleration tolerates taint.
func Tolerates(tolerations []corev1.Toleration, taint *corev1.Taint) bool {
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(logr.Discard(), taint, true) {
			return true
		}
	}
	return false
}

// WithoutEphemeral drops the known ephemeral taints and the given startup
// taints: what a node that is still initializing will look like once ready.
func (t Taints) WithoutEphemeral(startup []corev1.Taint) Taints {
	out := make(Taints, 0, len(t))
	for _, taint := range t {
		if IsKnownEphemeralTaint(taint) || matchesAny(taint, startup) {
			continue
		}
		out = append(out, taint)
	}
	return out
}

func matchesAny(taint corev1.Taint, list []corev1.Taint) bool {
	for i := range list {
		if list[i].MatchTaint(&taint) {
			return true
		}
	}
	return false
}
