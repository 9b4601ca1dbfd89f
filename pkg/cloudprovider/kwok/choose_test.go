package kwok

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/catalog"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
)

// These tests exercise offering selection only, which needs no API server.

func claimFor(reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc"}, Spec: karpv1.NodeClaimSpec{Requirements: reqs}}
}

func in(key string, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

// cheapestSpot is the model's cheapest spot zone of a type.
func cheapestSpot(name string, onDemand float64) (string, float64) {
	zone, price := "", 0.0
	for _, z := range DefaultZones {
		p := catalog.SpotPrice(name, z, onDemand, catalog.DefaultOptions())
		if zone == "" || p < price {
			zone, price = z, p
		}
	}
	return zone, price
}

func newSelectionProvider(t *testing.T, clk *clocktesting.FakeClock, opts ...Option) *CloudProvider {
	t.Helper()
	c, err := New(nil, append([]Option{WithInstanceTypes(mustEmbeddedTypes(t)), WithClock(clk)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestChooseCheapestAndCapacityType(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := newSelectionProvider(t, clk)
	spotZone, _ := cheapestSpot("m5.large", 0.096)
	tests := map[string]struct {
		nodeClaim *karpv1.NodeClaim
		want      cloudprovider.OfferingKey
	}{
		"spot is cheapest when allowed": {
			nodeClaim: claimFor(in(corev1.LabelInstanceTypeStable, "m5.large", "m5.xlarge")),
			want:      cloudprovider.OfferingKey{InstanceType: "m5.large", Zone: spotZone, CapacityType: karpv1.CapacityTypeSpot},
		},
		"on-demand only": {
			nodeClaim: claimFor(in(corev1.LabelInstanceTypeStable, "m5.large", "m5.xlarge"), in(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeOnDemand)),
			want:      cloudprovider.OfferingKey{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: karpv1.CapacityTypeOnDemand},
		},
		"zone restricted on-demand": {
			nodeClaim: claimFor(in(corev1.LabelInstanceTypeStable, "m5.large"), in(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeOnDemand),
				in(corev1.LabelTopologyZone, "us-east-1c")),
			want: cloudprovider.OfferingKey{InstanceType: "m5.large", Zone: "us-east-1c", CapacityType: karpv1.CapacityTypeOnDemand},
		},
		"gpu request picks a gpu type": {
			nodeClaim: func() *karpv1.NodeClaim {
				nc := claimFor(in(corev1.LabelInstanceTypeStable, "m5.large", "p3.8xlarge"))
				nc.Spec.Resources.Requests = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}
				return nc
			}(),
			want: func() cloudprovider.OfferingKey {
				zone, _ := cheapestSpot("p3.8xlarge", 12.24)
				return cloudprovider.OfferingKey{InstanceType: "p3.8xlarge", Zone: zone, CapacityType: karpv1.CapacityTypeSpot}
			}(),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := c.choose(tc.nodeClaim, c.instanceTypes())
			if err != nil {
				t.Fatal(err)
			}
			if got.Key() != tc.want {
				t.Errorf("chose %s, want %s", got.Key(), tc.want)
			}
		})
	}
}

func TestInsufficientCapacityFallsBackNextRound(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	spotZone, _ := cheapestSpot("m5.large", 0.096)
	refused := cloudprovider.OfferingKey{InstanceType: "m5.large", Zone: spotZone, CapacityType: karpv1.CapacityTypeSpot}
	c := newSelectionProvider(t, clk, WithInsufficientCapacity(refused), WithUnavailableOfferingsTTL(time.Minute))
	nc := claimFor(in(corev1.LabelInstanceTypeStable, "m5.large"))

	// 1. The cheapest offering is refused and remembered.
	_, err := c.choose(nc, c.instanceTypes())
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("choose returned %v, want an InsufficientCapacityError", err)
	}
	if !c.UnavailableOfferings().IsUnavailable(refused) {
		t.Fatal("the refused offering is not in the unavailable cache")
	}
	// 2. GetInstanceTypes reports it unavailable, without touching the catalog.
	types, _ := c.GetInstanceTypes(t.Context(), nil)
	if offeringOf(t, types, refused).Available {
		t.Error("GetInstanceTypes still offers the refused offering")
	}
	if !offeringOf(t, mustEmbeddedTypes(t), refused).Available {
		t.Error("the shared catalog was mutated")
	}
	if zr := typeNamed(t, types, "m5.large").Requirements.Get(corev1.LabelTopologyZone); zr.Len() != 3 {
		t.Errorf("zone requirement %s lost a zone still served on-demand", zr)
	}
	// 3. The next round launches the next cheapest offering.
	next, err := c.choose(nc, c.instanceTypes())
	if err != nil {
		t.Fatalf("the next round failed: %v", err)
	}
	if next.Key() == refused || next.Key().CapacityType != karpv1.CapacityTypeSpot {
		t.Errorf("the next round chose %s, want another spot offering", next.Key())
	}
	// 4. After the TTL the offering is tried again (and refused again).
	clk.Step(time.Minute)
	types, _ = c.GetInstanceTypes(t.Context(), nil)
	if !offeringOf(t, types, refused).Available {
		t.Error("the refused offering is still unavailable after the TTL")
	}
	if _, err := c.choose(nc, c.instanceTypes()); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Errorf("after the TTL choose returned %v, want the offering refused again", err)
	}
}

func offeringOf(t *testing.T, types []*cloudprovider.InstanceType, key cloudprovider.OfferingKey) *cloudprovider.Offering {
	t.Helper()
	for _, o := range typeNamed(t, types, key.InstanceType).Offerings {
		if o.Zone == key.Zone && o.CapacityType == key.CapacityType {
			return o
		}
	}
	t.Fatalf("no offering %s", key)
	return nil
}

func TestGetInstanceTypesSharesTheCatalogWhenNothingIsUnavailable(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := newSelectionProvider(t, clk)
	a, _ := c.GetInstanceTypes(t.Context(), nil)
	if len(a) != len(mustEmbeddedTypes(t)) || a[0] != mustEmbeddedTypes(t)[0] {
		t.Error("GetInstanceTypes copied the catalog although nothing is unavailable")
	}
}
