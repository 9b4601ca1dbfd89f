package refresh_test

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/cache"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/providers/refresh"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instancetype"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/pricing"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/instancetypes"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func TestPricingRefresh(t *testing.T) {
	ec2, pricingAPI := fake.NewEC2(), fake.NewPricing()
	prices, err := pricing.NewProvider(ec2, pricingAPI, "us-west-2", false, clocktesting.NewFakeClock(now))
	if err != nil {
		t.Fatal(err)
	}
	c := refresh.NewPricingController(prices)

	// The APIs fail: the error goes to controller-runtime's backoff and the
	// embedded prices stay.
	pricingAPI.FailNext("GetProducts", 2, fake.Throttling("GetProducts"))
	if _, err := c.Reconcile(t.Context(), reconcile.Request{}); err == nil {
		t.Fatal("a failed refresh returned no error")
	}
	static, _ := pricing.StaticOnDemandPrices()
	if p, _ := prices.OnDemandPrice("m5.large"); p != static["m5.large"] {
		t.Errorf("m5.large = %v after a failed refresh, want the embedded %v", p, static["m5.large"])
	}

	pricingAPI.SetOnDemandPrice("us-west-2", "m5.large", 0.5)
	pricingAPI.SetOnDemandPrice("us-west-2", "m5.metal", 5)
	ec2.SetSpotPrice("m5.large", fake.OfferingZone{Name: "us-west-2a", ID: "usw2-az1"}, 0.2, now.Add(-time.Minute))
	res, err := c.Reconcile(t.Context(), reconcile.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != refresh.Period {
		t.Errorf("requeue after %s, want %s", res.RequeueAfter, refresh.Period)
	}
	if p, _ := prices.OnDemandPrice("m5.large"); p != 0.5 {
		t.Errorf("m5.large on-demand = %v, want the API's 0.5", p)
	}
	if p, _ := prices.SpotPrice("m5.large", "us-west-2a"); p != 0.2 {
		t.Errorf("m5.large spot = %v, want the API's 0.2", p)
	}
}

func TestInstanceTypeRefresh(t *testing.T) {
	clk := clocktesting.NewFakeClock(now)
	ec2 := fake.NewEC2()
	infos, err := fake.CatalogInstanceTypes(instancetypes.EC2)
	if err != nil {
		t.Fatal(err)
	}
	ec2.SeedCatalog(infos[:10], fake.OfferingZone{Name: "us-west-2a", ID: "usw2-az1"})
	prices, err := pricing.NewProvider(ec2, fake.NewPricing(), "us-west-2", true, clk)
	if err != nil {
		t.Fatal(err)
	}
	provider := instancetype.NewProvider(ec2, prices, cache.NewUnavailableOfferings(clk), nil, instancetype.Options{Region: "us-west-2"}, clk)
	res, err := refresh.NewInstanceTypeController(provider).Reconcile(t.Context(), reconcile.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != refresh.Period {
		t.Errorf("requeue after %s, want %s", res.RequeueAfter, refresh.Period)
	}
	if ec2.Calls("DescribeInstanceTypes") != 1 || ec2.Calls("DescribeInstanceTypeOfferings") != 1 {
		t.Errorf("refresh made %d DescribeInstanceTypes and %d DescribeInstanceTypeOfferings calls, want 1 each",
			ec2.Calls("DescribeInstanceTypes"), ec2.Calls("DescribeInstanceTypeOfferings"))
	}
	nodeClass := &awsv1.EC2NodeClass{Status: awsv1.EC2NodeClassStatus{Subnets: []awsv1.Subnet{{ID: "subnet-a", Zone: "us-west-2a", ZoneID: "usw2-az1"}}}}
	types, err := provider.List(t.Context(), nodeClass)
	if err != nil {
		t.Fatal(err)
	}
	if len(types) != 10 {
		t.Errorf("%d instance types after the refresh, want the 10 EC2 lists", len(types))
	}
}
