package overlay_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	karpv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/v1alpha1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/overlay"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
)

const widget = corev1.ResourceName("example.com/widget")

// instanceType is a type of the family label "m" or "c", on-demand at
// price in zones a and b and spot at half the price in zone a.
func instanceType(name, family string, price float64) *cloudprovider.InstanceType {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}
	return scheduling.NewInstanceType(name, map[string]string{"example.com/family": family}, res, res.DeepCopy(), []*cloudprovider.Offering{
		{Zone: "a", CapacityType: karpv1.CapacityTypeOnDemand, Price: price, Available: true},
		{Zone: "b", CapacityType: karpv1.CapacityTypeOnDemand, Price: price, Available: true},
		{Zone: "a", CapacityType: karpv1.CapacityTypeSpot, Price: price / 2, Available: true},
	})
}

func decode(t *testing.T, nos ...*karpv1alpha1.NodeOverlay) []overlay.Overlay {
	t.Helper()
	var out []overlay.Overlay
	for _, no := range nos {
		if err := no.RuntimeValidate(); err != nil {
			t.Fatalf("overlay %s invalid: %v", no.Name, err)
		}
		o, err := overlay.New(no)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	overlay.Order(out)
	return out
}

// prices renders a type's offering prices as "zone/capacity-type" → price.
func prices(it *cloudprovider.InstanceType) map[string]float64 {
	out := map[string]float64{}
	for _, o := range it.Offerings {
		out[o.Zone+"/"+o.CapacityType] = o.Price
	}
	return out
}

func TestApplyPrices(t *testing.T) {
	od, spot := karpv1.CapacityTypeOnDemand, karpv1.CapacityTypeSpot
	tests := map[string]struct {
		overlays []*karpv1alpha1.NodeOverlay
		pool     *karpv1.NodePool
		want     map[string]map[string]float64
	}{
		"no overlay": {
			want: map[string]map[string]float64{"m1": {"a/on-demand": 1, "b/on-demand": 1, "a/spot": 0.5}, "c1": {"a/on-demand": 2, "b/on-demand": 2, "a/spot": 1}},
		},
		"percentage on one instance type": {
			overlays: []*karpv1alpha1.NodeOverlay{test.MakeNodeOverlay("m1-up").Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m1").PriceAdjustment("+100%").Obj()},
			want:     map[string]map[string]float64{"m1": {"a/on-demand": 2, "b/on-demand": 2, "a/spot": 1}, "c1": {"a/on-demand": 2, "b/on-demand": 2, "a/spot": 1}},
		},
		"absolute price on a zone's offerings only": {
			overlays: []*karpv1alpha1.NodeOverlay{test.MakeNodeOverlay("zone-b").Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "b").Price("9").Obj()},
			want:     map[string]map[string]float64{"m1": {"a/on-demand": 1, "b/on-demand": 9, "a/spot": 0.5}, "c1": {"a/on-demand": 2, "b/on-demand": 9, "a/spot": 1}},
		},
		"capacity type and instance label": {
			overlays: []*karpv1alpha1.NodeOverlay{test.MakeNodeOverlay("c-spot").Requirement("example.com/family", corev1.NodeSelectorOpIn, "c").
				Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, spot).PriceAdjustment("-0.5").Obj()},
			want: map[string]map[string]float64{"m1": {"a/on-demand": 1, "b/on-demand": 1, "a/spot": 0.5}, "c1": {"a/on-demand": 2, "b/on-demand": 2, "a/spot": 0.5}},
		},
		"an adjustment never goes below zero": {
			overlays: []*karpv1alpha1.NodeOverlay{test.MakeNodeOverlay("free").Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, od).PriceAdjustment("-5").Obj()},
			want:     map[string]map[string]float64{"m1": {"a/on-demand": 0, "b/on-demand": 0, "a/spot": 0.5}, "c1": {"a/on-demand": 0, "b/on-demand": 0, "a/spot": 1}},
		},
		"the nodepool selects": {
			overlays: []*karpv1alpha1.NodeOverlay{test.MakeNodeOverlay("other-pool").Requirement(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, "other").Price("9").Obj()},
			want:     map[string]map[string]float64{"m1": {"a/on-demand": 1, "b/on-demand": 1, "a/spot": 0.5}, "c1": {"a/on-demand": 2, "b/on-demand": 2, "a/spot": 1}},
		},
		"template labels select": {
			overlays: []*karpv1alpha1.NodeOverlay{test.MakeNodeOverlay("team").Requirement("example.com/team", corev1.NodeSelectorOpIn, "blue").Price("3").Obj()},
			pool:     test.MakeNodePool("default").Labels(map[string]string{"example.com/team": "blue"}).Obj(),
			want:     map[string]map[string]float64{"m1": {"a/on-demand": 3, "b/on-demand": 3, "a/spot": 3}, "c1": {"a/on-demand": 3, "b/on-demand": 3, "a/spot": 3}},
		},
		"a label nobody defines does not match In": {
			overlays: []*karpv1alpha1.NodeOverlay{test.MakeNodeOverlay("team").Requirement("example.com/team", corev1.NodeSelectorOpIn, "blue").Price("3").Obj()},
			want:     map[string]map[string]float64{"m1": {"a/on-demand": 1, "b/on-demand": 1, "a/spot": 0.5}, "c1": {"a/on-demand": 2, "b/on-demand": 2, "a/spot": 1}},
		},
		"a label nobody defines matches DoesNotExist": {
			overlays: []*karpv1alpha1.NodeOverlay{test.MakeNodeOverlay("untagged").Requirement("example.com/team", corev1.NodeSelectorOpDoesNotExist).Price("3").Obj()},
			want:     map[string]map[string]float64{"m1": {"a/on-demand": 3, "b/on-demand": 3, "a/spot": 3}, "c1": {"a/on-demand": 3, "b/on-demand": 3, "a/spot": 3}},
		},
		"the higher weight wins an offering": {
			overlays: []*karpv1alpha1.NodeOverlay{
				test.MakeNodeOverlay("low").Price("5").Weight(1).Obj(),
				test.MakeNodeOverlay("high").Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m1").Price("7").Weight(50).Obj(),
			},
			want: map[string]map[string]float64{"m1": {"a/on-demand": 7, "b/on-demand": 7, "a/spot": 7}, "c1": {"a/on-demand": 5, "b/on-demand": 5, "a/spot": 5}},
		},
		"an unset weight is below any set one": {
			overlays: []*karpv1alpha1.NodeOverlay{
				test.MakeNodeOverlay("zz-unweighted").Price("5").Obj(),
				test.MakeNodeOverlay("aa-weighted").Price("7").Weight(1).Obj(),
			},
			want: map[string]map[string]float64{"m1": {"a/on-demand": 7, "b/on-demand": 7, "a/spot": 7}, "c1": {"a/on-demand": 7, "b/on-demand": 7, "a/spot": 7}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			types := []*cloudprovider.InstanceType{instanceType("m1", "m", 1), instanceType("c1", "c", 2)}
			pool := tc.pool
			if pool == nil {
				pool = test.MakeNodePool("default").Obj()
			}
			got := map[string]map[string]float64{}
			for i, it := range overlay.Apply(decode(t, tc.overlays...), pool, types) {
				got[it.Name] = prices(it)
				if changed := !cmp.Equal(prices(types[i]), got[it.Name]); it.PriceOverlaid != changed {
					t.Errorf("%s PriceOverlaid = %v, prices changed %v", it.Name, it.PriceOverlaid, changed)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("prices (-want +got):\n%s", diff)
			}
			// The provider's values are shared: never mutated.
			if p := prices(types[0]); p["a/on-demand"] != 1 || p["a/spot"] != 0.5 {
				t.Errorf("the provider's m1 was mutated: %v", p)
			}
		})
	}
}

func TestApplyCapacity(t *testing.T) {
	tests := map[string]struct {
		overlays []*karpv1alpha1.NodeOverlay
		want     map[string]string // m1's widget and gadget quantities, "" when absent
	}{
		"adds an extended resource": {
			overlays: []*karpv1alpha1.NodeOverlay{test.MakeNodeOverlay("widgets").Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m1").
				Capacity(corev1.ResourceList{widget: resource.MustParse("4")}).Obj()},
			want: map[string]string{"widget": "4"},
		},
		"higher weight wins a resource, others merge": {
			overlays: []*karpv1alpha1.NodeOverlay{
				test.MakeNodeOverlay("low").Capacity(corev1.ResourceList{widget: resource.MustParse("1"), "example.com/gadget": resource.MustParse("2")}).Weight(1).Obj(),
				test.MakeNodeOverlay("high").Capacity(corev1.ResourceList{widget: resource.MustParse("8")}).Weight(2).Obj(),
			},
			want: map[string]string{"widget": "8", "gadget": "2"},
		},
		"no offering selected, no capacity": {
			overlays: []*karpv1alpha1.NodeOverlay{test.MakeNodeOverlay("zone-z").Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "z").
				Capacity(corev1.ResourceList{widget: resource.MustParse("4")}).Obj()},
			want: map[string]string{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m1 := instanceType("m1", "m", 1)
			got := overlay.Apply(decode(t, tc.overlays...), test.MakeNodePool("default").Obj(), []*cloudprovider.InstanceType{m1})[0]
			quantities := map[string]string{}
			for short, name := range map[string]corev1.ResourceName{"widget": widget, "gadget": "example.com/gadget"} {
				c, a := got.Capacity[name], got.Allocatable[name]
				if c.String() != a.String() {
					t.Errorf("%s capacity %s, allocatable %s: want the same", name, c.String(), a.String())
				}
				if q, ok := got.Capacity[name]; ok {
					quantities[short] = q.String()
				}
			}
			if diff := cmp.Diff(tc.want, quantities); diff != "" {
				t.Errorf("extended resources (-want +got):\n%s", diff)
			}
			if got.CapacityOverlaid != (len(tc.want) > 0) {
				t.Errorf("CapacityOverlaid = %v with extended resources %v", got.CapacityOverlaid, quantities)
			}
			if got.Capacity.Cpu().String() != "4" {
				t.Errorf("cpu = %s, want the type's 4", got.Capacity.Cpu())
			}
			if _, ok := m1.Capacity[widget]; ok {
				t.Error("the provider's instance type was mutated")
			}
		})
	}
}

func TestOrder(t *testing.T) {
	got := decode(t,
		test.MakeNodeOverlay("b").Weight(5).Obj(),
		test.MakeNodeOverlay("a").Weight(5).Obj(),
		test.MakeNodeOverlay("z").Obj(),
		test.MakeNodeOverlay("c").Weight(10).Obj(),
	)
	var names []string
	for _, o := range got {
		names = append(names, o.Name)
	}
	// Highest weight first; equal weights: the name that sorts last first.
	if diff := cmp.Diff([]string{"c", "b", "a", "z"}, names); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestEvaluateConflicts(t *testing.T) {
	mOnly := func(name string) *test.NodeOverlayWrapper {
		return test.MakeNodeOverlay(name).Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m1")
	}
	tests := map[string]struct {
		overlays      []*karpv1alpha1.NodeOverlay
		wantApplied   []string
		wantConflicts []string
	}{
		"same weight, same offerings: the later name applies": {
			overlays:      []*karpv1alpha1.NodeOverlay{mOnly("a").Price("1").Weight(3).Obj(), mOnly("b").Price("2").Weight(3).Obj()},
			wantApplied:   []string{"b"},
			wantConflicts: []string{"a"},
		},
		"different weights do not conflict": {
			overlays:    []*karpv1alpha1.NodeOverlay{mOnly("a").Price("1").Weight(3).Obj(), mOnly("b").Price("2").Weight(4).Obj()},
			wantApplied: []string{"b", "a"},
		},
		"same weight, disjoint offerings do not conflict": {
			overlays: []*karpv1alpha1.NodeOverlay{
				mOnly("a").Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "a").Price("1").Obj(),
				mOnly("b").Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "b").Price("2").Obj(),
			},
			wantApplied: []string{"b", "a"},
		},
		"price and capacity of one weight do not conflict": {
			overlays:    []*karpv1alpha1.NodeOverlay{mOnly("a").Price("1").Obj(), mOnly("b").Capacity(corev1.ResourceList{widget: resource.MustParse("1")}).Obj()},
			wantApplied: []string{"b", "a"},
		},
		"same weight, same resource conflicts": {
			overlays: []*karpv1alpha1.NodeOverlay{
				mOnly("a").Capacity(corev1.ResourceList{widget: resource.MustParse("1")}).Obj(),
				test.MakeNodeOverlay("b").Capacity(corev1.ResourceList{widget: resource.MustParse("2")}).Obj(),
			},
			wantApplied:   []string{"b"},
			wantConflicts: []string{"a"},
		},
		"same weight, different resources merge": {
			overlays: []*karpv1alpha1.NodeOverlay{
				mOnly("a").Capacity(corev1.ResourceList{widget: resource.MustParse("1")}).Obj(),
				mOnly("b").Capacity(corev1.ResourceList{"example.com/gadget": resource.MustParse("2")}).Obj(),
			},
			wantApplied: []string{"b", "a"},
		},
		"a conflicting overlay is not partly applied": {
			// c conflicts with b on m1; its price for c1 must not apply
			// either, so a (lower weight) still sets c1.
			overlays: []*karpv1alpha1.NodeOverlay{
				mOnly("b").Price("2").Weight(5).Obj(),
				test.MakeNodeOverlay("a").Price("1").Weight(5).Obj(),
				test.MakeNodeOverlay("low").Price("7").Weight(1).Obj(),
			},
			wantApplied:   []string{"b", "low"},
			wantConflicts: []string{"a"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pools := []overlay.PoolTypes{{NodePool: test.MakeNodePool("default").Obj(),
				InstanceTypes: []*cloudprovider.InstanceType{instanceType("m1", "m", 1), instanceType("c1", "c", 2)}}}
			ev := overlay.Evaluate(decode(t, tc.overlays...), pools)
			var applied, conflicts []string
			for _, o := range ev.Applied {
				applied = append(applied, o.Name)
			}
			for name, msg := range ev.Conflicts {
				conflicts = append(conflicts, name)
				if msg == "" {
					t.Errorf("conflict of %s has no message", name)
				}
			}
			if diff := cmp.Diff(tc.wantApplied, applied); diff != "" {
				t.Errorf("applied (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantConflicts, conflicts); diff != "" {
				t.Errorf("conflicts (-want +got):\n%s", diff)
			}
		})
	}
}
