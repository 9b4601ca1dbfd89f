package simulation

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// spotCatalog is one large type (spot $0.80/h) and n small ones of
// distinct families, each holding a 1-cpu pod, with spot prices $0.04/h,
// $0.044/h, ... rising with i (all cheaper than the large one).
func spotCatalog(n int) (large *scheduling.InstanceType, types []*scheduling.InstanceType) {
	large = makeType("huge-large", "amd64", 2.00, "cpu", "8", "memory", "16Gi", "pods", "40")
	types = append(types, large)
	// Listed most expensive first, so the order of the result is the
	// replacement's own.
	for i := n - 1; i >= 0; i-- {
		types = append(types, makeType(fmt.Sprintf("f%02d-small", i), "amd64", 0.10+0.01*float64(i), "cpu", "2", "memory", "4Gi", "pods", "10"))
	}
	return large, types
}

// spotNode is an initialized spot node of NodePool "default".
func spotNode(name string, it *scheduling.InstanceType, pods ...*corev1.Pod) *Node {
	n := poolNode(name, it, pods...)
	n.Labels[karpv1.CapacityTypeLabelKey] = karpv1.CapacityTypeSpot
	return n
}

func TestConsolidateSpotToSpot(t *testing.T) {
	cases := map[string]struct {
		smallTypes int
		minValues  int // on the instance family, 0: none
		nodes      func(large *scheduling.InstanceType, types []*scheduling.InstanceType) []*Node
		candidates []string
		price      float64 // of each candidate; 0: $0.80/h
		gate       bool
		want       ConsolidationDecision
		wantReason string
		wantTypes  int // instance types of the replacement
	}{
		"gate off: a spot node is not replaced by a spot node": {
			smallTypes: 20, candidates: []string{"a"},
			want: ConsolidationNone, wantReason: "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node",
		},
		"gate off: a spot node whose pods fit elsewhere is still deleted": {
			smallTypes: 20, candidates: []string{"a"},
			nodes: func(large *scheduling.InstanceType, _ []*scheduling.InstanceType) []*Node {
				return []*Node{spotNode("a", large, cpuPod("p1", "1")), spotNode("b", large)}
			},
			want: ConsolidationDelete,
		},
		"gate on, fewer than 15 cheaper types: kept": {
			smallTypes: 10, candidates: []string{"a"}, gate: true,
			want: ConsolidationNone, wantReason: "SpotToSpotConsolidation requires 15 cheaper instance type options than the current candidate to consolidate, got 10",
		},
		"gate on, 20 cheaper types: replaced, launching with the 15 cheapest": {
			smallTypes: 20, candidates: []string{"a"}, gate: true,
			want: ConsolidationReplace, wantTypes: 15,
		},
		"gate on, exactly 15 cheaper types: replaced": {
			smallTypes: 15, candidates: []string{"a"}, gate: true,
			want: ConsolidationReplace, wantTypes: 15,
		},
		"gate on, minValues needs more than 15 types: keeps as many as it needs": {
			smallTypes: 20, minValues: 17, candidates: []string{"a"}, gate: true,
			want: ConsolidationReplace, wantTypes: 17,
		},
		"gate on, several candidates: no flexibility rule": {
			smallTypes: 5, candidates: []string{"a", "b"}, price: 0.40, gate: true,
			nodes: func(large *scheduling.InstanceType, _ []*scheduling.InstanceType) []*Node {
				return []*Node{spotNode("a", large, cpuPod("p1", "500m")), spotNode("b", large, cpuPod("p2", "500m"))}
			},
			want: ConsolidationReplace, wantTypes: 5,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			large, types := spotCatalog(tc.smallTypes)
			np := test.MakeNodePool("default")
			if tc.minValues > 0 {
				np = np.RequirementWithMinValues(labelFamily, corev1.NodeSelectorOpExists, tc.minValues)
			}
			nodes := []*Node{spotNode("a", large, cpuPod("p1", "1"))}
			if tc.nodes != nil {
				nodes = tc.nodes(large, types)
			}
			price := tc.price
			if price == 0 {
				price = 0.80
			}
			var cands []ConsolidationCandidate
			for _, c := range tc.candidates {
				cands = append(cands, ConsolidationCandidate{Name: c, Price: price, CapacityType: karpv1.CapacityTypeSpot})
			}
			in := Input{Nodes: nodes, NodePools: []*NodePool{withTypes(np.Obj(), types...)}}
			got := Consolidate(t.Context(), in, cands, ConsolidationOptions{RequireCheaper: true, SpotToSpot: tc.gate})
			if got.Decision != tc.want {
				t.Fatalf("decision = %s (%s), want %s", got.Decision, got.Reason, tc.want)
			}
			if tc.wantReason != "" && (got.Reason != tc.wantReason || !got.SpotToSpot) {
				t.Errorf("reason = %q (spot-to-spot %v), want %q from the spot-to-spot rules", got.Reason, got.SpotToSpot, tc.wantReason)
			}
			if tc.want != ConsolidationReplace {
				return
			}
			if len(got.Replacements) != 1 {
				t.Fatalf("%d replacements, want 1", len(got.Replacements))
			}
			assertSpotReplacement(t, got.Replacements[0], tc.wantTypes)
		})
	}
}

// assertSpotReplacement checks the replacement launches spot only, with
// the n cheapest small types, listed and required, cheapest first.
func assertSpotReplacement(t *testing.T, r *NodeClaim, n int) {
	t.Helper()
	if ct := r.Requirements.Get(scheduling.LabelCapacityType); ct == nil || ct.Len() != 1 || !ct.Has(karpv1.CapacityTypeSpot) {
		t.Errorf("capacity type requirement %v, want spot only", ct)
	}
	if r.Offering == nil || r.Offering.CapacityType != karpv1.CapacityTypeSpot {
		t.Errorf("priced offering %+v, want spot", r.Offering)
	}
	var want, got []string
	for i := range n {
		want = append(want, fmt.Sprintf("f%02d-small", i))
	}
	for _, it := range r.InstanceTypes {
		got = append(got, it.Name)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("instance types %v, want the %d cheapest %v", got, n, want)
	}
	req := r.Requirements.Get(corev1.LabelInstanceTypeStable)
	if req == nil || req.Len() != n {
		t.Fatalf("instance-type requirement %v, want the %d listed types", req, n)
	}
	for _, name := range want {
		if !req.Has(name) {
			t.Errorf("instance-type requirement %v lacks %s", req, name)
		}
	}
}

func TestDriftReplacesSpotWithoutTheSpotToSpotRules(t *testing.T) {
	large, types := spotCatalog(3)
	in := Input{Nodes: []*Node{spotNode("a", large, cpuPod("p1", "1"))}, NodePools: []*NodePool{withTypes(test.MakeNodePool("default").Obj(), types...)}}
	got := Consolidate(t.Context(), in, []ConsolidationCandidate{{Name: "a", Price: 0.80, CapacityType: karpv1.CapacityTypeSpot}},
		ConsolidationOptions{SpotToSpot: true})
	if got.Decision != ConsolidationReplace {
		t.Fatalf("decision = %s (%s), want a replacement at any flexibility", got.Decision, got.Reason)
	}
}
