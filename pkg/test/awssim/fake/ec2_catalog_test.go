package fake

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/aws/smithy-go"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/instancetypes"
)

var (
	zoneA = OfferingZone{Name: "us-west-2a", ID: "usw2-az1"}
	zoneB = OfferingZone{Name: "us-west-2b", ID: "usw2-az2"}
)

func TestCatalogInstanceTypes(t *testing.T) {
	infos, err := CatalogInstanceTypes(instancetypes.EC2)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != instancetypes.EC2Count {
		t.Fatalf("got %d instance types, want %d", len(infos), instancetypes.EC2Count)
	}
	byName := map[string]ec2types.InstanceTypeInfo{}
	for _, info := range infos {
		byName[string(info.InstanceType)] = info
	}
	for name, want := range map[string]struct {
		enis, ipv4, cards int32
		arch              ec2types.ArchitectureType
	}{
		"m5.large":      {enis: 3, ipv4: 10, cards: 1, arch: ec2types.ArchitectureTypeX8664},
		"m5.4xlarge":    {enis: 8, ipv4: 30, cards: 1, arch: ec2types.ArchitectureTypeX8664},
		"c5.18xlarge":   {enis: 15, ipv4: 50, cards: 1, arch: ec2types.ArchitectureTypeX8664},
		"a1.medium":     {enis: 2, ipv4: 4, cards: 1, arch: ec2types.ArchitectureTypeArm64},
		"p4d.24xlarge":  {enis: 15, ipv4: 50, cards: 4, arch: ec2types.ArchitectureTypeX8664},
		"trn1.32xlarge": {enis: 5, ipv4: 50, cards: 8, arch: ec2types.ArchitectureTypeX8664},
	} {
		info, ok := byName[name]
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		ni := info.NetworkInfo
		card := ni.NetworkCards[deref(ni.DefaultNetworkCardIndex)]
		if got := deref(card.MaximumNetworkInterfaces); got != want.enis {
			t.Errorf("%s: default card ENIs %d, want %d", name, got, want.enis)
		}
		if got := deref(ni.Ipv4AddressesPerInterface); got != want.ipv4 {
			t.Errorf("%s: IPv4 per ENI %d, want %d", name, got, want.ipv4)
		}
		if got := int32(len(ni.NetworkCards)); got != want.cards {
			t.Errorf("%s: %d network cards, want %d", name, got, want.cards)
		}
		if got := info.ProcessorInfo.SupportedArchitectures[0]; got != want.arch {
			t.Errorf("%s: architecture %s, want %s", name, got, want.arch)
		}
	}
	p4d := byName["p4d.24xlarge"]
	if gpu := p4d.GpuInfo.Gpus[0]; deref(gpu.Name) != "A100" || deref(gpu.Manufacturer) != "NVIDIA" || deref(gpu.Count) != 8 {
		t.Errorf("p4d.24xlarge GPU = %s %s x%d, want NVIDIA A100 x8", deref(gpu.Manufacturer), deref(gpu.Name), deref(gpu.Count))
	}
	inf2 := byName["inf2.48xlarge"].NeuronInfo.NeuronDevices[0]
	if deref(inf2.Count) != 12 || deref(inf2.CoreInfo.Count) != 2 {
		t.Errorf("inf2.48xlarge Neuron = %d devices of %d cores, want 12 of 2", deref(inf2.Count), deref(inf2.CoreInfo.Count))
	}
}

func TestDescribeInstanceTypesPaginatesAndFilters(t *testing.T) {
	infos, err := CatalogInstanceTypes(instancetypes.EC2)
	if err != nil {
		t.Fatal(err)
	}
	e := NewEC2()
	e.SeedCatalog(infos, zoneA, zoneB)
	ctx := t.Context()

	var all, arm []ec2types.InstanceTypeInfo
	in := &ec2.DescribeInstanceTypesInput{MaxResults: ptr(int32(100))}
	for {
		out, err := e.DescribeInstanceTypes(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, out.InstanceTypes...)
		if out.NextToken == nil {
			break
		}
		in.NextToken = out.NextToken
	}
	if len(all) != len(infos) {
		t.Errorf("paged through %d types, want %d", len(all), len(infos))
	}
	if got := e.Calls("DescribeInstanceTypes"); got != (len(infos)+99)/100 {
		t.Errorf("%d calls, want %d", got, (len(infos)+99)/100)
	}
	out, err := e.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{Filters: []ec2types.Filter{
		{Name: ptr("processor-info.supported-architecture"), Values: []string{"arm64"}},
		{Name: ptr("instance-type"), Values: []string{"m6g.*"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	arm = out.InstanceTypes
	if len(arm) == 0 {
		t.Fatal("no m6g types")
	}
	for _, info := range arm {
		if info.ProcessorInfo.SupportedArchitectures[0] != ec2types.ArchitectureTypeArm64 {
			t.Errorf("%s is not arm64", info.InstanceType)
		}
	}
	if _, err := e.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{MaxResults: ptr(int32(1000))}); apiCode(err) != "InvalidParameterValue" {
		t.Errorf("MaxResults 1000: error %v, want InvalidParameterValue", err)
	}
	if _, err := e.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{DryRun: ptr(true)}); apiCode(err) != "DryRunOperation" {
		t.Errorf("DryRun: error %v, want DryRunOperation", err)
	}
	e.FailNext("DescribeInstanceTypes", 1, Throttling("DescribeInstanceTypes"))
	if _, err := e.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{}); apiCode(err) != "RequestLimitExceeded" {
		t.Errorf("after FailNext: error %v, want RequestLimitExceeded", err)
	}
}

func TestDescribeInstanceTypeOfferings(t *testing.T) {
	e := NewEC2()
	e.AddInstanceTypeOfferings(zoneA, "m5.large", "c5.large")
	e.AddInstanceTypeOfferings(zoneB, "m5.large")
	ctx := t.Context()
	out, err := e.DescribeInstanceTypeOfferings(ctx, &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, o := range out.InstanceTypeOfferings {
		got[string(o.InstanceType)] = append(got[string(o.InstanceType)], deref(o.Location))
	}
	if len(got["m5.large"]) != 2 || len(got["c5.large"]) != 1 || got["c5.large"][0] != "us-west-2a" {
		t.Errorf("offerings = %v", got)
	}
	e.RemoveInstanceTypeOffering("m5.large", "us-west-2b")
	out, err = e.DescribeInstanceTypeOfferings(ctx, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZoneId,
		Filters:      []ec2types.Filter{{Name: ptr("instance-type"), Values: []string{"m5.large"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.InstanceTypeOfferings) != 1 || deref(out.InstanceTypeOfferings[0].Location) != "usw2-az1" {
		t.Errorf("m5.large by zone ID after removal = %v", out.InstanceTypeOfferings)
	}
}

func TestDescribeSpotPriceHistoryStartTime(t *testing.T) {
	e := NewEC2()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	e.SetSpotPrice("m5.large", zoneA, 0.040, t0)
	e.SetSpotPrice("m5.large", zoneA, 0.035, t0.Add(time.Hour))
	e.SetSpotPrice("m5.large", zoneB, 0.050, t0)
	e.SetSpotPrice("m5.large", zoneB, 0.055, t0.Add(3*time.Hour))
	out, err := e.DescribeSpotPriceHistory(t.Context(), &ec2.DescribeSpotPriceHistoryInput{
		StartTime:           ptr(t0.Add(2 * time.Hour)),
		EndTime:             ptr(t0.Add(2 * time.Hour)),
		ProductDescriptions: []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range out.SpotPriceHistory {
		got[deref(p.AvailabilityZone)] = deref(p.SpotPrice)
	}
	want := map[string]string{"us-west-2a": "0.035000", "us-west-2b": "0.050000"}
	if len(got) != len(want) || got["us-west-2a"] != want["us-west-2a"] || got["us-west-2b"] != want["us-west-2b"] {
		t.Errorf("prices in effect = %v, want %v", got, want)
	}
}

func TestGetProducts(t *testing.T) {
	p := NewPricing()
	for i, name := range []string{"m5.large", "m5.xlarge", "m5.metal"} {
		p.SetOnDemandPrice("us-east-1", name, 0.1*float64(i+1))
	}
	p.SetOnDemandPrice("eu-west-1", "m5.large", 0.2)
	filters := func(tenancy, family string) []pricingtypes.Filter {
		var fs []pricingtypes.Filter
		for k, v := range map[string]string{"regionCode": "us-east-1", "serviceCode": "AmazonEC2", "operatingSystem": "Linux", "tenancy": tenancy, "productFamily": family} {
			fs = append(fs, pricingtypes.Filter{Field: ptr(k), Type: pricingtypes.FilterTypeTermMatch, Value: ptr(v)})
		}
		return fs
	}
	ctx := t.Context()
	var docs []string
	in := &pricing.GetProductsInput{ServiceCode: ptr("AmazonEC2"), Filters: filters("Shared", "Compute Instance"), MaxResults: ptr(int32(2))}
	for {
		out, err := p.GetProducts(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, out.PriceList...)
		if out.NextToken == nil {
			break
		}
		in.NextToken = out.NextToken
	}
	if len(docs) != 3 {
		t.Fatalf("got %d shared us-east-1 products, want 3", len(docs))
	}
	var doc struct {
		Product struct {
			Attributes map[string]string `json:"attributes"`
		} `json:"product"`
		Terms struct {
			OnDemand map[string]struct {
				PriceDimensions map[string]struct {
					PricePerUnit map[string]string `json:"pricePerUnit"`
				} `json:"priceDimensions"`
			} `json:"OnDemand"`
		} `json:"terms"`
	}
	if err := json.Unmarshal([]byte(docs[0]), &doc); err != nil {
		t.Fatal(err)
	}
	var price string
	for _, term := range doc.Terms.OnDemand {
		for _, dim := range term.PriceDimensions {
			price = dim.PricePerUnit["USD"]
		}
	}
	if doc.Product.Attributes["instanceType"] != "m5.large" || price != "0.1000000000" {
		t.Errorf("first document is %s at %q, want m5.large at 0.1000000000", doc.Product.Attributes["instanceType"], price)
	}
	out, err := p.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: ptr("AmazonEC2"), Filters: filters("Dedicated", "Compute Instance (bare metal)")})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.PriceList) != 1 {
		t.Errorf("got %d bare-metal products, want 1 (m5.metal)", len(out.PriceList))
	}
}

func apiCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}
