package validation_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodepool/validation"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

func TestValidationSucceeded(t *testing.T) {
	taint := corev1.Taint{Key: "example.com/dedicated", Effect: corev1.TaintEffectNoSchedule}
	for name, tc := range map[string]struct {
		pool       *karpv1.NodePool
		wantStatus metav1.ConditionStatus
	}{
		"valid pool": {
			pool:       test.MakeNodePool("valid").Requirement(kwokv1alpha1.InstanceCPULabelKey, corev1.NodeSelectorOpLt, "33").Obj(),
			wantStatus: metav1.ConditionTrue,
		},
		"taint repeated as startup taint": {
			pool:       test.MakeNodePool("dup-taint").Taint(taint).StartupTaint(taint).Obj(),
			wantStatus: metav1.ConditionFalse,
		},
	} {
		t.Run(name, func(t *testing.T) {
			h.Reset(t)
			c := validation.NewController(h.Client, h.Clock)
			h.Create(t, tc.pool)
			if _, err := operatortest.Reconcile(t, h, c, tc.pool.Name); err != nil {
				t.Fatal(err)
			}
			got := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: tc.pool.Name}}
			h.Get(t, got)
			cond := got.StatusConditions().Get(karpv1.ConditionTypeValidationSucceeded)
			if cond == nil || cond.Status != tc.wantStatus {
				t.Fatalf("ValidationSucceeded = %+v, want %s", cond, tc.wantStatus)
			}
			if tc.wantStatus == metav1.ConditionFalse {
				if cond.Reason != validation.ReasonNodePoolValidationFailed || cond.Message == "" {
					t.Errorf("reason/message = %s/%q, want %s and the error", cond.Reason, cond.Message, validation.ReasonNodePoolValidationFailed)
				}
				if got.StatusConditions().IsTrue(karpv1.ConditionTypeReady) {
					t.Error("an invalid NodePool is Ready")
				}
			}
		})
	}
}
