package simulation

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// zonalType is an on-demand-only type priced per zone.
func zonalType(name string, prices map[string]float64, capacity ...string) *scheduling.InstanceType {
	rl := test.ResourceList(capacity...)
	var offerings []*scheduling.Offering
	for _, z := range []string{zoneA, zoneB, zoneC} {
		if p, ok := prices[z]; ok {
			offerings = append(offerings, &scheduling.Offering{Zone: z, CapacityType: karpv1.CapacityTypeOnDemand, Price: p, Available: true})
		}
	}
	return scheduling.NewInstanceType(name, map[string]string{corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"},
		rl, rl.DeepCopy(), offerings)
}

// TestConsolidationPricesTheWorstLaunchableOffering: a replacement may be
// launched in any zone its requirements allow, so the move is priced at
// the most expensive of those offerings, and a replacement that could cost
// as much as the node it replaces is not made.
func TestConsolidationPricesTheWorstLaunchableOffering(t *testing.T) {
	big := zonalType("big", map[string]float64{zoneA: 1.00}, "cpu", "8", "memory", "16Gi", "pods", "40")
	cases := map[string]struct {
		small       *scheduling.InstanceType
		want        ConsolidationDecision
		wantSavings float64
	}{
		"savings count the dearest zone": {
			small: zonalType("small", map[string]float64{zoneA: 0.10, zoneB: 0.30}, "cpu", "2", "memory", "4Gi", "pods", "10"),
			want:  ConsolidationReplace, wantSavings: 0.70,
		},
		"no replacement that may cost as much as the node": {
			small: zonalType("small", map[string]float64{zoneA: 0.10, zoneB: 1.20}, "cpu", "2", "memory", "4Gi", "pods", "10"),
			want:  ConsolidationNone,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pool := withTypes(test.MakeNodePool("default").Obj(), tc.small, big)
			in := Input{Nodes: []*Node{poolNode("a", big, cpuPod("p1", "1"))}, NodePools: []*NodePool{pool}}
			got := Consolidate(t.Context(), in, []ConsolidationCandidate{{Name: "a", Price: 1.00, CapacityType: karpv1.CapacityTypeOnDemand}},
				ConsolidationOptions{RequireCheaper: true})
			if got.Decision != tc.want {
				t.Fatalf("decision = %s (%s, savings %v), want %s", got.Decision, got.Reason, got.Savings, tc.want)
			}
			if tc.want == ConsolidationNone {
				if got.Reason == "" {
					t.Error("no reason for keeping the node")
				}
				return
			}
			if math.Abs(got.Savings-tc.wantSavings) > 1e-9 {
				t.Errorf("savings = %v, want %v", got.Savings, tc.wantSavings)
			}
			for _, r := range got.Replacements {
				if worst := replacementWorstPrice(r); worst >= 1.00 {
					t.Errorf("replacement may cost $%v/h, not less than the node's $1.00", worst)
				}
			}
		})
	}
}

// replacementWorstPrice is the dearest offering any listed type of r may
// launch with under r's requirements.
func replacementWorstPrice(r *NodeClaim) float64 {
	worst := 0.0
	for _, it := range r.InstanceTypes {
		for _, o := range it.Offerings {
			if o.Available && o.CompatibleWith(r.Requirements) {
				worst = max(worst, o.Price)
			}
		}
	}
	return worst
}

// TestConsolidationSplitsAtProportionalPrices: on a price list where twice
// the size costs twice as much (EC2's c6a.xlarge, 2xlarge and 4xlarge),
// three 3-cpu pods on a 16-cpu node fit an 8-cpu node plus a 4-cpu one for
// 3/4 of the price. The 4-cpu replacement's budget is the node's price
// less the 8-cpu one's, 0.612-(0.459-0.153) = 0.30600000000000005 in
// floating point: the 8-cpu type, priced exactly at it, must not stay on
// the 4-cpu replacement's list, or the move may cost as much as the node
// and is refused.
func TestConsolidationSplitsAtProportionalPrices(t *testing.T) {
	all := func(p float64) map[string]float64 { return map[string]float64{zoneA: p, zoneB: p, zoneC: p} }
	xlarge := zonalType("c6a.xlarge", all(0.153), "cpu", "3920m", "memory", "6584Mi", "pods", "58")
	x2large := zonalType("c6a.2xlarge", all(0.306), "cpu", "7910m", "memory", "14162Mi", "pods", "58")
	x4large := zonalType("c6a.4xlarge", all(0.612), "cpu", "15890m", "memory", "27381Mi", "pods", "234")
	pool := withTypes(test.MakeNodePool("default").Obj(), xlarge, x2large, x4large)
	in := Input{Nodes: []*Node{poolNode("a", x4large, cpuPod("p1", "3"), cpuPod("p2", "3"), cpuPod("p3", "3"))}, NodePools: []*NodePool{pool}}
	got := Consolidate(t.Context(), in, []ConsolidationCandidate{{Name: "a", Price: 0.612, CapacityType: karpv1.CapacityTypeOnDemand}},
		ConsolidationOptions{RequireCheaper: true})
	if got.Decision != ConsolidationReplace || len(got.Replacements) != 2 {
		t.Fatalf("decision = %s with %d replacements (%s), want a replacement by 2 nodes", got.Decision, len(got.Replacements), got.Reason)
	}
	worst := 0.0
	for _, r := range got.Replacements {
		worst += replacementWorstPrice(r)
	}
	if math.Abs(worst-0.459) > 1e-9 || math.Abs(got.Savings-0.153) > 1e-9 {
		t.Errorf("replacements may cost $%v/h with savings $%v/h, want $0.459 and $0.153", worst, got.Savings)
	}
}
