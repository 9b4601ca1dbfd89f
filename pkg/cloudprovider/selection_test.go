package cloudprovider

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

func offering(zone, capacityType string, price float64) *Offering {
	return &Offering{Zone: zone, CapacityType: capacityType, Price: price, Available: true}
}

func instanceType(name, arch, cpu string, offerings ...*Offering) *InstanceType {
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi")}
	return scheduling.NewInstanceType(name, map[string]string{corev1.LabelArchStable: arch, "example.com/gpu": "none"}, alloc, alloc, offerings)
}

func nodeClaim(reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc"}, Spec: karpv1.NodeClaimSpec{Requirements: reqs}}
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
}

func keys(launches []Launch) []string {
	var out []string
	for _, l := range launches {
		out = append(out, l.Key().String())
	}
	return out
}

func TestLaunchCandidatesOrderAndFilter(t *testing.T) {
	small := instanceType("small", "amd64", "2",
		offering("zone-b", karpv1.CapacityTypeOnDemand, 0.10),
		offering("zone-a", karpv1.CapacityTypeOnDemand, 0.10),
		offering("zone-a", karpv1.CapacityTypeSpot, 0.04))
	arm := instanceType("arm", "arm64", "2",
		offering("zone-a", karpv1.CapacityTypeSpot, 0.03),
		offering("zone-a", karpv1.CapacityTypeOnDemand, 0.10))
	big := instanceType("big", "amd64", "16", offering("zone-a", karpv1.CapacityTypeOnDemand, 0.80))
	unavailable := offering("zone-c", karpv1.CapacityTypeSpot, 0.01)
	unavailable.Available = false
	small.Offerings = append(small.Offerings, unavailable)
	types := []*InstanceType{big, small, arm}

	tests := map[string]struct {
		nodeClaim *karpv1.NodeClaim
		skip      func(OfferingKey) bool
		want      []string
	}{
		"cheapest first, on-demand before spot on a price tie, then zone": {
			nodeClaim: nodeClaim(req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "small", "arm")),
			want:      []string{"arm/zone-a/spot", "small/zone-a/spot", "arm/zone-a/on-demand", "small/zone-a/on-demand", "small/zone-b/on-demand"},
		},
		"capacity type requirement keeps on-demand only": {
			nodeClaim: nodeClaim(req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand),
				req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64")),
			want: []string{"small/zone-a/on-demand", "small/zone-b/on-demand", "big/zone-a/on-demand"},
		},
		"zone requirement": {
			nodeClaim: nodeClaim(req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b")),
			want:      []string{"small/zone-b/on-demand"},
		},
		"skipped offerings are left out": {
			nodeClaim: nodeClaim(req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "small")),
			skip:      func(k OfferingKey) bool { return k.CapacityType == karpv1.CapacityTypeSpot },
			want:      []string{"small/zone-a/on-demand", "small/zone-b/on-demand"},
		},
		"Exists on a label no type defines matches nothing": {
			nodeClaim: nodeClaim(req("example.com/accelerator", corev1.NodeSelectorOpExists)),
		},
		"NotIn on an undefined label and a single custom value are fine": {
			nodeClaim: nodeClaim(req("example.com/accelerator", corev1.NodeSelectorOpNotIn, "x"),
				req("team", corev1.NodeSelectorOpIn, "a"), req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "big")),
			want: []string{"big/zone-a/on-demand"},
		},
		"unknown instance type": {
			nodeClaim: nodeClaim(req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "nope")),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := keys(LaunchCandidates(types, tc.nodeClaim, tc.skip))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("candidates (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestLaunchCandidatesRespectResourceRequests(t *testing.T) {
	small := instanceType("small", "amd64", "2", offering("zone-a", karpv1.CapacityTypeOnDemand, 0.1))
	big := instanceType("big", "amd64", "16", offering("zone-a", karpv1.CapacityTypeOnDemand, 0.8))
	nc := nodeClaim()
	nc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
	if diff := cmp.Diff([]string{"big/zone-a/on-demand"}, keys(LaunchCandidates([]*InstanceType{small, big}, nc, nil))); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
	nc.Spec.Resources.Requests["example.com/fpga"] = resource.MustParse("1")
	if got := LaunchCandidates([]*InstanceType{small, big}, nc, nil); len(got) != 0 {
		t.Errorf("a request for a resource no type has matched %v", keys(got))
	}
}

func TestLaunchLabels(t *testing.T) {
	it := instanceType("small", "amd64", "2", offering("zone-a", karpv1.CapacityTypeSpot, 0.04), offering("zone-b", karpv1.CapacityTypeSpot, 0.05))
	nc := nodeClaim(req("team", corev1.NodeSelectorOpIn, "a"), req("tier", corev1.NodeSelectorOpIn, "x", "y"),
		req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-a", "zone-b"))
	nc.Labels = map[string]string{karpv1.NodePoolLabelKey: "default"}
	got := LaunchLabels(nc, Launch{InstanceType: it, Offering: it.Offerings[1]})
	want := map[string]string{
		karpv1.NodePoolLabelKey:        "default",
		"team":                         "a",
		corev1.LabelArchStable:         "amd64",
		"example.com/gpu":              "none",
		corev1.LabelInstanceTypeStable: "small",
		corev1.LabelTopologyZone:       "zone-b",
		karpv1.CapacityTypeLabelKey:    karpv1.CapacityTypeSpot,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("labels (-want,+got):\n%s", diff)
	}
}
