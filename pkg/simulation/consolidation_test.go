package simulation

import (
	"fmt"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// onDemandOnly drops the spot offerings of the types, so prices are the
// listed ones.
func onDemandOnly(types []*scheduling.InstanceType) []*scheduling.InstanceType {
	for _, it := range types {
		var keep []*scheduling.Offering
		for _, o := range it.Offerings {
			if o.CapacityType == karpv1.CapacityTypeOnDemand {
				keep = append(keep, o)
			}
		}
		it.Offerings = keep
		it.RefreshOfferingRequirements()
	}
	return types
}

// poolNode is an initialized node of NodePool "default" of the given type.
func poolNode(name string, it *scheduling.InstanceType, pods ...*corev1.Pod) *Node {
	n := test.MakeNode(name).Labels(map[string]string{karpv1.NodePoolLabelKey: "default",
		corev1.LabelInstanceTypeStable: it.Name, corev1.LabelTopologyZone: zoneA,
		karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeOnDemand, corev1.LabelArchStable: "amd64"}).Obj()
	n.Status.Capacity, n.Status.Allocatable = it.Capacity, it.Allocatable
	return existingNode(n, pods...)
}

func cpuPod(name, cpu string) *corev1.Pod {
	return test.MakePod(name).Namespace("default").UID(name).Requests("cpu", cpu).Obj()
}

func TestConsolidate(t *testing.T) {
	small := makeType("general-small", "amd64", 0.10, "cpu", "2", "memory", "4Gi", "pods", "10")
	big := makeType("general-huge", "amd64", 1.00, "cpu", "8", "memory", "16Gi", "pods", "40")
	types := onDemandOnly([]*scheduling.InstanceType{small, big})
	pool := withTypes(test.MakeNodePool("default").Obj(), types...)
	cases := map[string]struct {
		nodes      []*Node
		candidates []ConsolidationCandidate
		opts       ConsolidationOptions
		want       ConsolidationDecision
		wantClaims int
		wantSaving float64
		wantReason string
	}{
		"pods fit on the other node: delete": {
			nodes:      []*Node{poolNode("a", small, cpuPod("p1", "500m")), poolNode("b", small, cpuPod("p2", "500m"))},
			candidates: []ConsolidationCandidate{{Name: "a", Price: 0.10}},
			opts:       ConsolidationOptions{RequireCheaper: true},
			want:       ConsolidationDelete, wantSaving: 0.10,
		},
		"a big node with a small pod is replaced by a small one": {
			nodes:      []*Node{poolNode("a", big, cpuPod("p1", "1"))},
			candidates: []ConsolidationCandidate{{Name: "a", Price: 1.00}},
			opts:       ConsolidationOptions{RequireCheaper: true},
			want:       ConsolidationReplace, wantClaims: 1, wantSaving: 0.90,
		},
		"one node replaced by two smaller ones when cheaper": {
			nodes:      []*Node{poolNode("a", big, cpuPod("p1", "1500m"), cpuPod("p2", "1500m"))},
			candidates: []ConsolidationCandidate{{Name: "a", Price: 1.00}},
			opts:       ConsolidationOptions{RequireCheaper: true},
			want:       ConsolidationReplace, wantClaims: 2, wantSaving: 0.80,
		},
		"no cheaper placement": {
			nodes:      []*Node{poolNode("a", small, cpuPod("p1", "1500m"))},
			candidates: []ConsolidationCandidate{{Name: "a", Price: 0.10}},
			opts:       ConsolidationOptions{RequireCheaper: true},
			want:       ConsolidationNone, wantReason: "no cheaper placement: replacements cost $0.1000/h, the nodes cost $0.1000/h",
		},
		// The replacement may launch either type: its savings are priced at
		// the dearer one.
		"drift replaces at any price": {
			nodes:      []*Node{poolNode("a", small, cpuPod("p1", "1500m"))},
			candidates: []ConsolidationCandidate{{Name: "a", Price: 0.10}},
			want:       ConsolidationReplace, wantClaims: 1, wantSaving: -0.90,
		},
		"a pod with nowhere to go": {
			nodes:      []*Node{poolNode("a", big, cpuPod("p1", "12"))},
			candidates: []ConsolidationCandidate{{Name: "a", Price: 1.00}},
			opts:       ConsolidationOptions{RequireCheaper: true},
			want:       ConsolidationNone,
		},
		"two candidates merge onto one cheaper node": {
			nodes: []*Node{poolNode("a", small, cpuPod("p1", "500m")), poolNode("b", small, cpuPod("p2", "500m")),
				poolNode("c", big, cpuPod("p3", "6"))},
			candidates: []ConsolidationCandidate{{Name: "a", Price: 0.10}, {Name: "b", Price: 0.10}},
			opts:       ConsolidationOptions{RequireCheaper: true},
			want:       ConsolidationDelete, wantSaving: 0.20,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := Input{Nodes: tc.nodes, NodePools: []*NodePool{pool}}
			got := Consolidate(t.Context(), in, tc.candidates, tc.opts)
			if got.Decision != tc.want {
				t.Fatalf("decision = %s (%s), want %s", got.Decision, got.Reason, tc.want)
			}
			if len(got.Replacements) != tc.wantClaims {
				t.Errorf("replacements = %d, want %d", len(got.Replacements), tc.wantClaims)
			}
			if tc.want != ConsolidationNone && math.Abs(got.Savings-tc.wantSaving) > 1e-9 {
				t.Errorf("savings = %v, want %v", got.Savings, tc.wantSaving)
			}
			if tc.wantReason != "" && got.Reason != tc.wantReason {
				t.Errorf("reason = %q, want %q", got.Reason, tc.wantReason)
			}
			if tc.want == ConsolidationNone && got.Reason == "" {
				t.Error("no reason for keeping the node")
			}
			for _, r := range got.Replacements {
				for _, it := range r.InstanceTypes {
					if tc.opts.RequireCheaper && it.Name == big.Name {
						t.Errorf("replacement may launch %s, which is not cheaper", it.Name)
					}
				}
				if got := r.Requirements.Get(corev1.LabelInstanceTypeStable); got == nil || got.Has(big.Name) == tc.opts.RequireCheaper {
					t.Errorf("instance-type requirement %v not narrowed", got)
				}
			}
		})
	}
}

func TestConsolidateDoesNotMutateInput(t *testing.T) {
	small := onDemandOnly([]*scheduling.InstanceType{makeType("general-small", "amd64", 0.10, "cpu", "2", "memory", "4Gi", "pods", "10")})[0]
	nodes := []*Node{poolNode("a", small, cpuPod("p1", "500m")), poolNode("b", small)}
	in := Input{Nodes: nodes, NodePools: []*NodePool{withTypes(test.MakeNodePool("default").Obj(), small)}}
	Consolidate(t.Context(), in, []ConsolidationCandidate{{Name: "a", Price: 0.1}}, ConsolidationOptions{RequireCheaper: true})
	if nodes[0].MarkedForDeletion {
		t.Fatal("the caller's node was marked for deletion")
	}
}

func TestBalancedApproves(t *testing.T) {
	cases := map[string]struct {
		savings, poolCost, disruption, poolDisruption float64
		want                                          bool
	}{
		"saves half the cost for half the disruption":      {0.5, 1, 5, 10, true},
		"saves a quarter for half the disruption":          {0.25, 1, 5, 10, true},
		"saves a tenth for half the disruption":            {0.1, 1, 5, 10, false},
		"saves nothing":                                    {0, 1, 0, 10, false},
		"disrupts nothing":                                 {0.01, 1, 0, 10, true},
		"saves a little for a little disruption, approved": {0.02, 1, 0.3, 10, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			score, got := BalancedApproves(tc.savings, tc.poolCost, tc.disruption, tc.poolDisruption)
			if got != tc.want {
				t.Errorf("approved = %v (score %s), want %v", got, fmt.Sprint(score), tc.want)
			}
		})
	}
}

// TestConsolidateKeepsZonalVolumesInTheirZone: a pod whose volume is
// pinned to zone a may not be moved onto a node in zone b, even though
// deleting its node would then be the cheapest move; a cheaper replacement
// is launched in zone a instead.
func TestConsolidateKeepsZonalVolumesInTheirZone(t *testing.T) {
	small := makeType("general-small", "amd64", 0.10, "cpu", "2", "memory", "4Gi", "pods", "10")
	big := makeType("general-huge", "amd64", 1.00, "cpu", "8", "memory", "16Gi", "pods", "40")
	pool := withTypes(test.MakeNodePool("default").Obj(), onDemandOnly([]*scheduling.InstanceType{small, big})...)
	inZoneA := scheduling.NewNodeSelectorRequirements(req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zoneA))
	cases := map[string]struct {
		volumes      map[types.UID][]scheduling.Requirements
		want         ConsolidationDecision
		wantZone     string
		wantSavings  float64
		wantReplaced int
	}{
		"without volume topology the pod moves to zone b": {
			want: ConsolidationDelete, wantSavings: 1.00,
		},
		"a volume in zone a keeps the pod in zone a": {
			volumes: map[types.UID][]scheduling.Requirements{"p1": {inZoneA}},
			want:    ConsolidationReplace, wantZone: zoneA, wantSavings: 0.90, wantReplaced: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nodeB := poolNode("b", small)
			nodeB.Labels[corev1.LabelTopologyZone] = zoneB
			in := Input{Nodes: []*Node{poolNode("a", big, cpuPod("p1", "1")), nodeB}, NodePools: []*NodePool{pool},
				VolumeRequirements: tc.volumes}
			got := Consolidate(t.Context(), in, []ConsolidationCandidate{{Name: "a", Price: 1.00}}, ConsolidationOptions{RequireCheaper: true})
			if got.Decision != tc.want {
				t.Fatalf("decision = %s (%s), want %s", got.Decision, got.Reason, tc.want)
			}
			if math.Abs(got.Savings-tc.wantSavings) > 1e-9 {
				t.Errorf("savings = %v, want %v", got.Savings, tc.wantSavings)
			}
			if len(got.Replacements) != tc.wantReplaced {
				t.Fatalf("replacements = %d, want %d", len(got.Replacements), tc.wantReplaced)
			}
			for _, r := range got.Replacements {
				zones := r.Requirements.Get(corev1.LabelTopologyZone)
				if zones == nil || zones.Len() != 1 || !zones.Has(tc.wantZone) || r.Offering.Zone != tc.wantZone {
					t.Errorf("replacement zones = %v (offering in %s), want only %s", zones, r.Offering.Zone, tc.wantZone)
				}
			}
		})
	}
}
