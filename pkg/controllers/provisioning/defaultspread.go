package provisioning

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// hintHardDefaultSpread takes out of the unhinted fill (see package hint)
// the pods that a DoNotSchedule default constraint spreads: the scheduler
// places them by more than their requests, as it would with a spread of
// their own, which the fill never leaves unhinted.
func hintHardDefaultSpread(fill map[types.UID]bool, defaults map[types.UID][]corev1.TopologySpreadConstraint) {
	for uid, constraints := range defaults {
		if slices.ContainsFunc(constraints, func(c corev1.TopologySpreadConstraint) bool {
			return c.WhenUnsatisfiable == corev1.DoNotSchedule
		}) {
			delete(fill, uid)
		}
	}
}
