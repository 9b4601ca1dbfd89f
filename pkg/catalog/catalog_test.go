package catalog

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
)

const sample = `{"instanceTypes": [
 {"name": "a.small", "labels": {"kubernetes.io/arch": "amd64", "example.com/family": "a"},
  "capacity": {"cpu": "2", "memory": "4Gi", "pods": "10"}, "kubeReserved": {"cpu": "100m", "memory": "256Mi"},
  "onDemandPricePerHour": 0.1},
 {"name": "b.large", "allocatable": {"cpu": "7900m", "memory": "30Gi", "pods": "58"},
  "offerings": [{"zone": "z1", "capacityType": "spot", "price": 0.2}, {"zone": "z2", "capacityType": "on-demand", "price": 0.5, "available": false}]}
]}`

func TestParse(t *testing.T) {
	types, err := Parse([]byte(sample), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	small, large := types[0], types[1]
	if got := small.Allocatable[corev1.ResourceCPU]; got.Cmp(resource.MustParse("1900m")) != 0 {
		t.Errorf("allocatable cpu %s, want capacity minus kubeReserved 1900m", got.String())
	}
	if got := small.Allocatable[corev1.ResourceMemory]; got.Cmp(resource.MustParse("3840Mi")) != 0 {
		t.Errorf("allocatable memory %s, want 3840Mi", got.String())
	}
	if got := large.Capacity[corev1.ResourceCPU]; got.Cmp(resource.MustParse("7900m")) != 0 {
		t.Errorf("capacity defaults to allocatable, got %s", got.String())
	}
	if len(small.Offerings) != 6 {
		t.Fatalf("derived %d offerings, want 3 on-demand + 3 spot", len(small.Offerings))
	}
	for _, o := range small.Offerings {
		switch o.CapacityType {
		case scheduling.CapacityTypeOD:
			if o.Price != 0.1 {
				t.Errorf("on-demand price %v", o.Price)
			}
		case scheduling.CapacityTypeSpot:
			if o.Price < 0.1*0.25-1e-4 || o.Price > 0.1*0.45+1e-4 {
				t.Errorf("spot price %v outside 55-75%% off", o.Price)
			}
		}
	}
	if !small.Requirements.Get("example.com/family").Has("a") || !small.Requirements.Get(corev1.LabelInstanceTypeStable).Has("a.small") {
		t.Error("labels and instance type missing from requirements")
	}
	if r := large.Requirements.Get(corev1.LabelTopologyZone); !r.Has("z1") || r.Has("z2") {
		t.Errorf("zones %s, want only the available z1", r)
	}
	if o, _ := large.CheapestOffering(scheduling.Requirements{}); o.Zone != "z1" {
		t.Errorf("cheapest offering %+v", o)
	}
}

func TestSpotPriceIsDeterministicPerZone(t *testing.T) {
	opts := DefaultOptions()
	a, b := SpotPrice("m5.large", "us-east-1a", 1, opts), SpotPrice("m5.large", "us-east-1a", 1, opts)
	if a != b {
		t.Fatalf("same input, prices %v and %v", a, b)
	}
	seen := map[float64]bool{}
	for _, z := range opts.Zones {
		seen[SpotPrice("m5.large", z, 1, opts)] = true
	}
	if len(seen) < 2 {
		t.Fatal("spot prices do not vary by zone")
	}
	narrow := Options{SpotDiscountMin: 0.5, SpotDiscountMax: 0.5}
	if p := SpotPrice("x", "z", 2, narrow); p != 1 {
		t.Fatalf("50%% off 2 = %v", p)
	}
}

func TestParseErrors(t *testing.T) {
	for name, doc := range map[string]string{
		"no name":      `{"instanceTypes": [{"capacity": {"cpu": "1"}, "onDemandPricePerHour": 1}]}`,
		"no capacity":  `{"instanceTypes": [{"name": "x", "onDemandPricePerHour": 1}]}`,
		"no price":     `{"instanceTypes": [{"name": "x", "capacity": {"cpu": "1"}}]}`,
		"duplicate":    `{"instanceTypes": [{"name": "x", "capacity": {"cpu": "1"}, "onDemandPricePerHour": 1}, {"name": "x", "capacity": {"cpu": "1"}, "onDemandPricePerHour": 1}]}`,
		"not json":     `{`,
		"bad quantity": `{"instanceTypes": [{"name": "x", "capacity": {"cpu": "lots"}, "onDemandPricePerHour": 1}]}`,
	} {
		if _, err := Parse([]byte(doc), DefaultOptions()); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestMarkUnavailable(t *testing.T) {
	types, err := Parse([]byte(sample), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if n := MarkUnavailable(types, "a.small", "us-east-1a", scheduling.CapacityTypeSpot); n != 1 {
		t.Fatalf("changed %d offerings, want 1", n)
	}
	if n := MarkUnavailable(types, "a.small", "", ""); n != 5 {
		t.Fatalf("changed %d offerings, want the 5 left", n)
	}
	if _, ok := types[0].CheapestOffering(scheduling.Requirements{}); ok {
		t.Fatal("an offering is still available")
	}
	if r := types[0].Requirements.Get(corev1.LabelTopologyZone); !r.IsEmpty() {
		t.Fatalf("zones %s after marking everything unavailable", r)
	}
}

// TestShippedCatalogs parses the catalogs the repository ships: the EC2
// catalog the kwok provider embeds and the benchmark's two.
func TestShippedCatalogs(t *testing.T) {
	for file, want := range map[string]int{
		fixtures.EC2Catalog(t):                        1364,
		fixtures.Bench(t, "instance-types-400.json"):  400,
		fixtures.Bench(t, "kwok-instance-types.json"): 144,
	} {
		types, err := LoadFile(file, DefaultOptions())
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(types) != want {
			t.Errorf("%s: %d types, want %d", file, len(types), want)
		}
		for _, it := range types {
			if _, ok := it.CheapestOffering(scheduling.Requirements{}); !ok {
				t.Errorf("%s: %s has no available offering", file, it.Name)
				break
			}
		}
	}
}
