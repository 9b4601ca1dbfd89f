package invariants

import (
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestDesiredHealthy(t *testing.T) {
	minAvailable := func(v intstr.IntOrString) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &v}}
	}
	maxUnavailable := func(v intstr.IntOrString) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &v}}
	}
	observed := minAvailable(intstr.FromInt32(1))
	observed.Generation, observed.Status.ObservedGeneration, observed.Status.DesiredHealthy = 2, 2, 7
	stale := minAvailable(intstr.FromInt32(3))
	stale.Generation, stale.Status.ObservedGeneration, stale.Status.DesiredHealthy = 3, 2, 7
	for name, tc := range map[string]struct {
		pdb      *policyv1.PodDisruptionBudget
		expected int
		want     int
	}{
		"minAvailable count":               {minAvailable(intstr.FromInt32(2)), 5, 2},
		"minAvailable percent rounds up":   {minAvailable(intstr.FromString("50%")), 5, 3},
		"maxUnavailable count":             {maxUnavailable(intstr.FromInt32(1)), 5, 4},
		"maxUnavailable percent rounds up": {maxUnavailable(intstr.FromString("10%")), 5, 4},
		"maxUnavailable above expected":    {maxUnavailable(intstr.FromInt32(9)), 5, 0},
		"malformed percent protects all":   {minAvailable(intstr.FromString("half")), 5, 1<<31 - 1},
		"neither set defaults to one":      {&policyv1.PodDisruptionBudget{}, 5, 1},
		"the controller's figure wins":     {observed, 5, 7},
		"a stale figure does not":          {stale, 5, 3},
	} {
		t.Run(name, func(t *testing.T) {
			if got := desiredHealthy(tc.pdb, tc.expected); got != tc.want {
				t.Errorf("desiredHealthy = %d, want %d", got, tc.want)
			}
		})
	}
}
