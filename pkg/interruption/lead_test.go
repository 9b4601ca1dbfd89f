package interruption_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/interruption"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// The lead is twice the launch time plus slack, within its bounds: the
// expiry, notice and repair callers' values.
func TestLaunchLead(t *testing.T) {
	for name, tc := range map[string]struct {
		launch, slack, floor, ceiling, want time.Duration
	}{
		"repair, nothing observed: the floor": {0, interruption.LaunchSlack, 30 * time.Second, 5 * time.Minute, 30 * time.Second},
		"repair, 1m launches":                 {time.Minute, interruption.LaunchSlack, 30 * time.Second, 5 * time.Minute, 130 * time.Second},
		"repair, 3m launches: the ceiling":    {3 * time.Minute, interruption.LaunchSlack, 30 * time.Second, 5 * time.Minute, 5 * time.Minute},
		"expiry, 20s launches, 10s polls":     {20 * time.Second, 10 * time.Second, 30 * time.Second, 10 * time.Minute, 50 * time.Second},
		"expiry, ceiling below the floor":     {0, 10 * time.Second, 30 * time.Second, 20 * time.Second, 20 * time.Second},
		"notice, unbounded":                   {25 * time.Second, interruption.LaunchSlack, 0, interruption.NoLeadCeiling, time.Minute},
	} {
		t.Run(name, func(t *testing.T) {
			if got := interruption.LaunchLead(tc.launch, tc.slack, tc.floor, tc.ceiling); got != tc.want {
				t.Errorf("LaunchLead = %s, want %s", got, tc.want)
			}
		})
	}
}

// A NodeClaim's launch time runs from creation to Initialized; it has none
// until it is initialized.
func TestLaunchTime(t *testing.T) {
	created := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	claim := func(status metav1.ConditionStatus) *karpv1.NodeClaim {
		w := test.MakeNodeClaim("nc")
		w.CreationTimestamp = metav1.NewTime(created)
		if status != "" {
			w.Condition(karpv1.ConditionTypeInitialized, status, "Test", created.Add(40*time.Second))
		}
		return w.Obj()
	}
	for name, tc := range map[string]struct {
		nodeClaim *karpv1.NodeClaim
		want      time.Duration
		ok        bool
	}{
		"initialized":     {claim(metav1.ConditionTrue), 40 * time.Second, true},
		"not initialized": {claim(metav1.ConditionFalse), 0, false},
		"no condition":    {claim(""), 0, false},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := interruption.LaunchTime(tc.nodeClaim)
			if got != tc.want || ok != tc.ok {
				t.Errorf("LaunchTime = %s, %v; want %s, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
