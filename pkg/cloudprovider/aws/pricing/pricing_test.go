package pricing_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karp-autoscaler/karp/pkg/catalog"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/pricing"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/instancetypes"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

var (
	now   = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	zoneA = fake.OfferingZone{Name: "us-west-2a", ID: "usw2-az1"}
	zoneB = fake.OfferingZone{Name: "us-west-2b", ID: "usw2-az2"}
)

type env struct {
	ec2      *fake.EC2
	pricing  *fake.Pricing
	provider *pricing.Provider
}

func newEnv(t *testing.T, region string, isolatedVPC bool) env {
	t.Helper()
	e := env{ec2: fake.NewEC2(), pricing: fake.NewPricing()}
	var err error
	e.provider, err = pricing.NewProvider(e.ec2, e.pricing, region, isolatedVPC, clocktesting.NewFakeClock(now))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestStaticPricesBeforeAnyUpdate(t *testing.T) {
	e := newEnv(t, "us-west-2", false)
	static, err := pricing.StaticOnDemandPrices()
	if err != nil {
		t.Fatal(err)
	}
	if len(static) < 1000 {
		t.Fatalf("embedded catalog has %d prices, want over 1000", len(static))
	}
	got, ok := e.provider.OnDemandPrice("m5.large")
	if !ok || got != static["m5.large"] {
		t.Errorf("m5.large on-demand = %v, %v; want the embedded %v", got, ok, static["m5.large"])
	}
	if spot, ok := e.provider.SpotPrice("m5.large", "us-west-2c"); !ok || spot != static["m5.large"] {
		t.Errorf("m5.large spot before any spot data = %v, %v; want the on-demand price %v", spot, ok, static["m5.large"])
	}
	if _, ok := e.provider.OnDemandPrice("x99.huge"); ok {
		t.Error("an unknown type has a price")
	}
}

func TestUpdateFromTheAPIs(t *testing.T) {
	e := newEnv(t, "us-west-2", false)
	// 150 shared-tenancy products page twice at MaxResults 100.
	for i := range 148 {
		e.pricing.SetOnDemandPrice("us-west-2", fmt.Sprintf("z%d.large", i), 1)
	}
	e.pricing.SetOnDemandPrice("us-west-2", "m5.large", 0.5)
	e.pricing.SetOnDemandPrice("us-west-2", "m5.metal", 5.0)
	e.pricing.SetOnDemandPrice("eu-west-1", "c5.large", 9.0) // another region
	e.ec2.SetSpotPrice("m5.large", zoneA, 0.30, now.Add(-2*time.Hour))
	e.ec2.SetSpotPrice("m5.large", zoneA, 0.20, now.Add(-time.Hour)) // newer wins
	e.ec2.SetSpotPrice("m5.large", zoneB, 0.25, now.Add(-time.Hour))

	if err := e.provider.Update(t.Context()); err != nil {
		t.Fatal(err)
	}
	check := func(what string, got float64, ok bool, want float64, wantOK bool) {
		t.Helper()
		if ok != wantOK || got != want {
			t.Errorf("%s = %v (found %v), want %v (found %v)", what, got, ok, want, wantOK)
		}
	}
	p, ok := e.provider.OnDemandPrice("m5.large")
	check("m5.large on-demand", p, ok, 0.5, true)
	p, ok = e.provider.OnDemandPrice("m5.metal")
	check("m5.metal on-demand", p, ok, 5.0, true)
	p, ok = e.provider.OnDemandPrice("z147.large")
	check("z147.large on-demand (second page)", p, ok, 1, true)
	static, _ := pricing.StaticOnDemandPrices()
	p, ok = e.provider.OnDemandPrice("c5.large")
	check("c5.large on-demand (not in this region's answer: kept)", p, ok, static["c5.large"], true)
	p, ok = e.provider.SpotPrice("m5.large", "us-west-2a")
	check("m5.large spot in 2a (latest record)", p, ok, 0.20, true)
	p, ok = e.provider.SpotPrice("m5.large", "us-west-2b")
	check("m5.large spot in 2b", p, ok, 0.25, true)
	_, ok = e.provider.SpotPrice("m5.large", "us-west-2c")
	check("m5.large spot in 2c (no data after the first spot update)", 0, ok, 0, false)
	if calls := e.pricing.Calls("GetProducts"); calls != 3 {
		t.Errorf("GetProducts called %d times, want 3 (two shared pages, one bare-metal page)", calls)
	}
}

func TestUpdateFailuresKeepPrices(t *testing.T) {
	e := newEnv(t, "us-west-2", false)
	e.pricing.SetOnDemandPrice("us-west-2", "m5.large", 0.5)
	e.pricing.SetOnDemandPrice("us-west-2", "m5.metal", 5.0)
	e.ec2.SetSpotPrice("m5.large", zoneA, 0.2, now.Add(-time.Hour))
	if err := e.provider.Update(t.Context()); err != nil {
		t.Fatal(err)
	}

	e.pricing.ClearProducts()
	e.pricing.SetOnDemandPrice("us-west-2", "m5.large", 0.7)
	e.pricing.FailNext("GetProducts", 2, fake.Throttling("GetProducts"))
	e.ec2.FailNext("DescribeSpotPriceHistory", 1, fake.Throttling("DescribeSpotPriceHistory"))
	err := e.provider.Update(t.Context())
	if err == nil || !strings.Contains(err.Error(), "on-demand") || !strings.Contains(err.Error(), "spot") {
		t.Fatalf("error = %v, want both updates to fail", err)
	}
	if p, _ := e.provider.OnDemandPrice("m5.large"); p != 0.5 {
		t.Errorf("m5.large on-demand after a failed update = %v, want the previous 0.5", p)
	}
	if p, _ := e.provider.SpotPrice("m5.large", "us-west-2a"); p != 0.2 {
		t.Errorf("m5.large spot after a failed update = %v, want the previous 0.2", p)
	}

	// No bare-metal product answered: the answer is incomplete and ignored.
	err = e.provider.UpdateOnDemandPricing(t.Context())
	if err == nil || !strings.Contains(err.Error(), "no on-demand pricing found") {
		t.Errorf("error = %v, want no on-demand pricing found", err)
	}
	if p, _ := e.provider.OnDemandPrice("m5.large"); p != 0.5 {
		t.Errorf("m5.large on-demand after an incomplete answer = %v, want the previous 0.5", p)
	}
	e.ec2.ClearSpotPrices()
	if err := e.provider.UpdateSpotPricing(t.Context()); err == nil || !strings.Contains(err.Error(), "no spot pricing found") {
		t.Errorf("error = %v, want no spot pricing found", err)
	}
}

func TestIsolatedVPCAndGovCloudSkipThePricingAPI(t *testing.T) {
	for name, tc := range map[string]struct {
		region   string
		isolated bool
	}{
		"isolated VPC": {"us-west-2", true},
		"GovCloud":     {"us-gov-west-1", false},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, tc.region, tc.isolated)
			e.pricing.SetOnDemandPrice(tc.region, "m5.large", 99)
			if err := e.provider.UpdateOnDemandPricing(t.Context()); err != nil {
				t.Fatal(err)
			}
			if calls := e.pricing.Calls("GetProducts"); calls != 0 {
				t.Errorf("GetProducts called %d times", calls)
			}
			static, _ := pricing.StaticOnDemandPrices()
			if p, _ := e.provider.OnDemandPrice("m5.large"); p != static["m5.large"] {
				t.Errorf("m5.large = %v, want the embedded %v", p, static["m5.large"])
			}
		})
	}
}

func TestChinaPricesInCNY(t *testing.T) {
	e := newEnv(t, "cn-north-1", false)
	e.pricing.AddProducts(
		fake.OnDemandProduct("cn-north-1", "m5.large", "Shared", "Compute Instance", "CNY", 0.9),
		fake.OnDemandProduct("cn-north-1", "m5.metal", "Dedicated", "Compute Instance (bare metal)", "CNY", 9),
	)
	if err := e.provider.UpdateOnDemandPricing(t.Context()); err != nil {
		t.Fatal(err)
	}
	if p, _ := e.provider.OnDemandPrice("m5.large"); p != 0.9 {
		t.Errorf("m5.large = %v, want 0.9 CNY", p)
	}
}

func TestPricingRegion(t *testing.T) {
	for region, want := range map[string]string{
		"us-west-2":      "us-east-1",
		"ap-northeast-1": "ap-south-1",
		"eu-west-3":      "eu-central-1",
		"cn-north-1":     "cn-northwest-1",
		"sa-east-1":      "us-east-1",
	} {
		if got := pricing.PricingRegion(region); got != want {
			t.Errorf("PricingRegion(%s) = %s, want %s", region, got, want)
		}
	}
}

// TestCatalogPricesThroughTheAPIs serves the embedded catalog's prices
// through the fakes, as the simulate-parity tests do: the provider then
// prices on-demand as the catalog and spot as karp's catalog model.
func TestCatalogPricesThroughTheAPIs(t *testing.T) {
	e := newEnv(t, "us-east-1", false)
	zones := []fake.OfferingZone{{Name: "us-east-1a", ID: "use1-az1"}, {Name: "us-east-1b", ID: "use1-az2"}}
	if err := e.pricing.SeedCatalogOnDemandPrices("us-east-1", instancetypes.EC2); err != nil {
		t.Fatal(err)
	}
	if err := e.ec2.SeedCatalogSpotPrices(instancetypes.EC2, zones, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := e.provider.Update(t.Context()); err != nil {
		t.Fatal(err)
	}
	static, _ := pricing.StaticOnDemandPrices()
	for _, name := range []string{"m5.large", "c6g.xlarge", "p4d.24xlarge", "m5.metal"} {
		if p, _ := e.provider.OnDemandPrice(name); p != static[name] {
			t.Errorf("%s on-demand = %v, want the catalog's %v", name, p, static[name])
		}
		for _, z := range zones {
			want := catalog.SpotPrice(name, z.Name, static[name], catalog.DefaultOptions())
			if p, _ := e.provider.SpotPrice(name, z.Name); p != want {
				t.Errorf("%s spot in %s = %v, want the catalog model's %v", name, z.Name, p, want)
			}
		}
	}
}
