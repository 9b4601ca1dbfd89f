package instancetype_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/cache"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instancetype"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/pricing"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/instancetypes"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

var (
	now   = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	zones = []fake.OfferingZone{
		{Name: "us-west-2a", ID: "usw2-az1"},
		{Name: "us-west-2b", ID: "usw2-az2"},
		{Name: "us-west-2c", ID: "usw2-az3"},
	}
)

type env struct {
	clock       *clocktesting.FakeClock
	ec2         *fake.EC2
	pricingAPI  *fake.Pricing
	prices      *pricing.Provider
	unavailable *cache.UnavailableOfferings
	provider    *instancetype.Provider
}

// newEnv seeds the EC2 fake with the embedded catalog's types offered in
// every test zone and returns a provider that has read them. opts nil means
// upstream's defaults.
func newEnv(t testing.TB, opts *instancetype.Options) env {
	t.Helper()
	infos, err := fake.CatalogInstanceTypes(instancetypes.EC2)
	if err != nil {
		t.Fatal(err)
	}
	e := env{clock: clocktesting.NewFakeClock(now), ec2: fake.NewEC2(), pricingAPI: fake.NewPricing()}
	e.ec2.SeedCatalog(infos, zones...)
	e.prices, err = pricing.NewProvider(e.ec2, e.pricingAPI, "us-west-2", false, e.clock)
	if err != nil {
		t.Fatal(err)
	}
	e.unavailable = cache.NewUnavailableOfferings(e.clock)
	o := instancetype.Options{Region: "us-west-2", VMMemoryOverheadPercent: 0.075}
	if opts != nil {
		o = *opts
	}
	e.provider = instancetype.NewProvider(e.ec2, e.prices, e.unavailable, nil, o, e.clock)
	if err := e.provider.Update(t.Context()); err != nil {
		t.Fatal(err)
	}
	return e
}

// nodeClass is an AL2023 class with one subnet in each test zone.
func nodeClass() *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:             "KarpenterNodeRole",
		},
	}
	for i, z := range zones {
		nc.Status.Subnets = append(nc.Status.Subnets, awsv1.Subnet{ID: "subnet-" + string(rune('a'+i)), Zone: z.Name, ZoneID: z.ID})
	}
	return nc
}
