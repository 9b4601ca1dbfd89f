package simulation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

func cpuType(name, cpu string) *scheduling.InstanceType {
	return &scheduling.InstanceType{Name: name, Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
}

func limitedClaim(np *karpv1.NodePool, chosen *scheduling.InstanceType, listed ...*scheduling.InstanceType) *NodeClaim {
	names := make([]string, 0, len(listed))
	for _, it := range listed {
		names = append(names, it.Name)
	}
	return &NodeClaim{NodePool: np, InstanceType: chosen, InstanceTypes: listed,
		Requirements: scheduling.NewRequirements(scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, names...)),
		Pods:         []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "p-" + chosen.Name}}}}
}

// TestAdmitLimits: with 4 cpu in use under a 10-cpu limit, a NodeClaim
// choosing 2 cpu but listing 8 is narrowed to the types that fit; the next
// one, whose chosen type no longer fits, is dropped, its pods unschedulable,
// and the placement order follows the NodeClaims kept.
func TestAdmitLimits(t *testing.T) {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "limited"}}
	np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("10")}
	small, medium, large := cpuType("small", "2"), cpuType("medium", "4"), cpuType("large", "8")
	in := Input{Nodes: []*Node{{Name: "n", Labels: map[string]string{karpv1.NodePoolLabelKey: "limited"},
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}}
	first, second := limitedClaim(np, small, small, medium, large), limitedClaim(np, medium, medium)
	res := &Result{NodeClaims: []*NodeClaim{first, second}, Order: []Placement{
		{Pod: second.Pods[0], NodeClaim: 1}, {Pod: first.Pods[0], NodeClaim: 0}}}

	AdmitLimits(in, res)

	if len(res.NodeClaims) != 1 {
		t.Fatalf("kept %d NodeClaims, want 1", len(res.NodeClaims))
	}
	kept := res.NodeClaims[0]
	if got := kept.Requirements.Get(corev1.LabelInstanceTypeStable).Values(); len(got) != 2 || len(kept.InstanceTypes) != 2 {
		t.Errorf("narrowed to %v (%d types), want small and medium", got, len(kept.InstanceTypes))
	}
	if len(first.InstanceTypes) != 3 {
		t.Errorf("the solver's NodeClaim was changed in place: %d types", len(first.InstanceTypes))
	}
	if len(res.PodErrors) != 1 || res.PodErrors[0].Pod != second.Pods[0] || res.PodErrors[0].Status.Code != scheduling.Unschedulable {
		t.Errorf("pod errors = %+v, want the dropped NodeClaim's pod, unschedulable", res.PodErrors)
	}
	if len(res.Order) != 1 || res.Order[0].Pod != first.Pods[0] || res.Order[0].NodeClaim != 0 {
		t.Errorf("order = %+v, want only the kept NodeClaim's pod at index 0", res.Order)
	}
}
