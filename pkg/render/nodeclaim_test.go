package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// decision is a solver decision on the NodePool "team": two instance
// types listed cheapest first (in the opposite of name order), a
// provider-defined label and a user label pinned by the pods.
func decision() *simulation.NodeClaim {
	nodePool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "pool-uid",
		Annotations: map[string]string{karpv1.NodePoolHashAnnotationKey: "123", karpv1.NodePoolHashVersionAnnotationKey: "v3", "other": "x"}}}
	nodePool.Spec.Template.ObjectMeta.Labels = map[string]string{"billing": "team-a"}
	nodePool.Spec.Template.ObjectMeta.Annotations = map[string]string{"note": "kept"}
	nodePool.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"}
	nodePool.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "team", Effect: corev1.TaintEffectNoSchedule}}

	cheap := &scheduling.InstanceType{Name: "z.large", Requirements: scheduling.NewRequirements(
		scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "z.large"),
		scheduling.NewRequirement(familyKey, corev1.NodeSelectorOpIn, "z"))}
	dear := &scheduling.InstanceType{Name: "a.large", Requirements: scheduling.NewRequirements(
		scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "a.large"),
		scheduling.NewRequirement(familyKey, corev1.NodeSelectorOpIn, "z"))}
	two := 2
	types := scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "a.large", "z.large")
	types.MinValues = &two
	return &simulation.NodeClaim{
		NodePool: nodePool,
		Requirements: scheduling.NewRequirements(types,
			scheduling.NewRequirement(familyKey, corev1.NodeSelectorOpIn, "z"),
			scheduling.NewRequirement("app", corev1.NodeSelectorOpIn, "web"),
			scheduling.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand)),
		InstanceTypes: []*scheduling.InstanceType{cheap, dear},
		InstanceType:  cheap,
		Requests:      corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")},
	}
}

func TestNodeClaimRendersTheDecision(t *testing.T) {
	nc := NodeClaim(decision())
	blockOwnerDeletion := true
	wantMeta := metav1.ObjectMeta{
		GenerateName: "team-",
		// The pods' label (not the provider's), the template's, the
		// NodePool's and the NodeClass's.
		Labels: map[string]string{"app": "web", "billing": "team-a", karpv1.NodePoolLabelKey: "team",
			"karpenter.kwok.sh/kwoknodeclass": "default"},
		// The template's annotations and the hash of the template it was
		// rendered from (the NodePool's own annotation, stale here, is not
		// copied), nothing else of the NodePool's.
		Annotations: map[string]string{"note": "kept", karpv1.NodePoolHashAnnotationKey: decision().NodePool.Hash(),
			karpv1.NodePoolHashVersionAnnotationKey: karpv1.NodePoolHashVersion},
		Finalizers: []string{karpv1.TerminationFinalizer},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "karpenter.sh/v1", Kind: "NodePool", Name: "team", UID: "pool-uid",
			BlockOwnerDeletion: &blockOwnerDeletion}},
	}
	if diff := cmp.Diff(wantMeta, nc.ObjectMeta); diff != "" {
		t.Errorf("metadata (-want,+got):\n%s", diff)
	}
	two := 2
	wantReqs := []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: "app", Operator: corev1.NodeSelectorOpIn, Values: []string{"web"}},
		{Key: familyKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"z"}},
		{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
		// The solver's price order, not name order, and minValues kept.
		{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"z.large", "a.large"}, MinValues: &two},
	}
	if diff := cmp.Diff(wantReqs, nc.Spec.Requirements); diff != "" {
		t.Errorf("requirements (-want,+got):\n%s", diff)
	}
	if got := nc.Spec.Resources.Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse("1500m")) != 0 {
		t.Errorf("cpu request %s, want 1500m", got.String())
	}
	if nc.Spec.NodeClassRef == nil || nc.Spec.NodeClassRef.Name != "default" || len(nc.Spec.Taints) != 1 {
		t.Errorf("template fields not carried: nodeClassRef %+v, taints %v", nc.Spec.NodeClassRef, nc.Spec.Taints)
	}
	if nc.APIVersion != "" || nc.Kind != "" {
		t.Errorf("TypeMeta %v set, want it left to the client", nc.TypeMeta)
	}
}

func TestNodeClaimMarksRelaxedMinValues(t *testing.T) {
	d := decision()
	if _, ok := NodeClaim(d).Annotations[karpv1.NodeClaimMinValuesRelaxedAnnotationKey]; ok {
		t.Error("annotated relaxed although minValues held")
	}
	d.MinValuesRelaxed = true
	if got := NodeClaim(d).Annotations[karpv1.NodeClaimMinValuesRelaxedAnnotationKey]; got != "true" {
		t.Errorf("relaxed annotation = %q, want true", got)
	}
}

// familyKey is a label the instance types define (the provider sets it).
const familyKey = "example.com/family"

func TestNodeClaimMarksOverlays(t *testing.T) {
	tests := map[string]struct {
		mark                func(types []*scheduling.InstanceType)
		wantPrice, wantSize bool
	}{
		"no overlay":             {mark: func([]*scheduling.InstanceType) {}},
		"price of one option":    {mark: func(types []*scheduling.InstanceType) { types[1].PriceOverlaid = true }, wantPrice: true},
		"capacity of one option": {mark: func(types []*scheduling.InstanceType) { types[0].CapacityOverlaid = true }, wantSize: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := decision()
			tc.mark(d.InstanceTypes)
			annotations := NodeClaim(d).Annotations
			if _, got := annotations[karpv1.PriceOverlayAppliedAnnotationKey]; got != tc.wantPrice {
				t.Errorf("price-overlay-applied present = %v, want %v", got, tc.wantPrice)
			}
			if _, got := annotations[karpv1.CapacityOverlayAppliedAnnotationKey]; got != tc.wantSize {
				t.Errorf("capacity-overlay-applied present = %v, want %v", got, tc.wantSize)
			}
		})
	}
}
