package test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

func TestMakeNodePoolSetsZeroValues(t *testing.T) {
	w := MakeNodePool("a").Weight(0).Budgets().Requirements().ExpireAfter(karpv1.NillableDuration{}).NodeClassRef(nil)
	got := w.Obj()
	if got.Spec.Weight == nil || *got.Spec.Weight != 0 {
		t.Errorf("weight = %v, want a pointer to 0", got.Spec.Weight)
	}
	if got.Spec.Disruption.Budgets != nil || got.Spec.Template.Spec.Requirements != nil {
		t.Errorf("budgets %v, requirements %v, want both nil", got.Spec.Disruption.Budgets, got.Spec.Template.Spec.Requirements)
	}
	if !got.Spec.Template.Spec.ExpireAfter.IsNever() || got.Spec.Template.Spec.NodeClassRef != nil {
		t.Errorf("expireAfter %v nodeClassRef %v, want Never and nil", got.Spec.Template.Spec.ExpireAfter, got.Spec.Template.Spec.NodeClassRef)
	}
}

func TestMakeNodePoolObjIsACopy(t *testing.T) {
	w := MakeNodePool("a").Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64")
	first := w.Obj()
	first.Spec.Template.Spec.Requirements[0].Values[0] = "arm64"
	if got := w.Obj().Spec.Template.Spec.Requirements[0].Values[0]; got != "amd64" {
		t.Errorf("mutating an Obj() result changed the builder: value %q", got)
	}
}

func TestMakeNodeClaimNodePoolLabel(t *testing.T) {
	got := MakeNodeClaim("c").NodePool("p").Label("x", "y").Obj()
	if got.Labels[karpv1.NodePoolLabelKey] != "p" || got.Labels["x"] != "y" {
		t.Errorf("labels = %v", got.Labels)
	}
}
