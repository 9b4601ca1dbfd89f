package kwok

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
)

// TestRepairPoliciesAreUpstreams: a kwok node is repaired after its Ready
// condition has been False or Unknown for upstream's ten minutes (the
// controller's --node-repair-toleration overrides it, not the provider).
func TestRepairPoliciesAreUpstreams(t *testing.T) {
	c := &CloudProvider{}
	want := []cloudprovider.RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 10 * time.Minute},
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, TolerationDuration: 10 * time.Minute},
	}
	if diff := cmp.Diff(want, c.RepairPolicies()); diff != "" {
		t.Errorf("RepairPolicies (-want +got):\n%s", diff)
	}
}
