package pricing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/karp-autoscaler/karp/pkg/catalog"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/instancetypes"
)

// ec2API is the EC2 call the provider makes.
type ec2API interface {
	DescribeSpotPriceHistory(ctx context.Context, in *ec2.DescribeSpotPriceHistoryInput, opts ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error)
}

// pricingAPI is the Price List Query API call the provider makes.
type pricingAPI interface {
	GetProducts(ctx context.Context, in *pricing.GetProductsInput, opts ...func(*pricing.Options)) (*pricing.GetProductsOutput, error)
}

// spotProductDescriptions are the Linux spot products, in VPC and not.
var spotProductDescriptions = []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"}

// Provider answers prices. It is safe for concurrent use.
type Provider struct {
	ec2     ec2API
	pricing pricingAPI
	region  string
	// skipOnDemand is set when the Pricing API is not called (isolated VPC
	// or GovCloud): the static table stays.
	skipOnDemand bool
	clock        clock.PassiveClock

	mu          sync.RWMutex
	onDemand    map[string]float64
	spot        map[string]map[string]float64
	spotUpdated bool
	skipLogged  bool
	// version counts the updates that changed the tables.
	version uint64
}

// NewProvider returns a provider for region seeded with the embedded
// catalog's on-demand prices. pricingClient should be a client for
// PricingRegion(region). With isolatedVPC the Pricing API is never called.
func NewProvider(ec2Client ec2API, pricingClient pricingAPI, region string, isolatedVPC bool, clk clock.PassiveClock) (*Provider, error) {
	static, err := StaticOnDemandPrices()
	if err != nil {
		return nil, err
	}
	return &Provider{
		ec2:          ec2Client,
		pricing:      pricingClient,
		region:       region,
		skipOnDemand: isolatedVPC || strings.HasPrefix(region, "us-gov"),
		clock:        clk,
		onDemand:     static,
		spot:         map[string]map[string]float64{},
	}, nil
}

// StaticOnDemandPrices returns the embedded catalog's us-east-1 Linux
// on-demand prices by instance type, the fallback for every region.
func StaticOnDemandPrices() (map[string]float64, error) {
	var f catalog.File
	if err := json.Unmarshal(instancetypes.EC2, &f); err != nil {
		return nil, fmt.Errorf("decoding the embedded catalog's prices: %w", err)
	}
	prices := make(map[string]float64, len(f.InstanceTypes))
	for _, it := range f.InstanceTypes {
		if it.OnDemandPricePerHour != nil && *it.OnDemandPricePerHour > 0 {
			prices[it.Name] = *it.OnDemandPricePerHour
		}
	}
	return prices, nil
}

// PricingRegion is the region whose Pricing API endpoint serves region's
// prices: the API lives in a few regions only.
func PricingRegion(region string) string {
	switch {
	case strings.HasPrefix(region, "ap-"):
		return "ap-south-1"
	case strings.HasPrefix(region, "cn-"):
		return "cn-northwest-1"
	case strings.HasPrefix(region, "eu-"):
		return "eu-central-1"
	}
	return "us-east-1"
}

// OnDemandPrice returns instanceType's on-demand price per hour.
func (p *Provider) OnDemandPrice(instanceType string) (float64, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	price, ok := p.onDemand[instanceType]
	return price, ok
}

// SpotPrice returns instanceType's spot price per hour in zone. Before the
// first spot update it is the on-demand price in every zone; afterwards only
// zones with spot data have a price.
func (p *Provider) SpotPrice(instanceType, zone string) (float64, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.spotUpdated {
		price, ok := p.onDemand[instanceType]
		return price, ok
	}
	price, ok := p.spot[instanceType][zone]
	return price, ok
}

// Version changes whenever an update merged new prices, so caches of
// priced offerings know when to rebuild.
func (p *Provider) Version() uint64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.version
}

// Update refreshes on-demand and spot prices in parallel; on error the
// previous prices are kept.
func (p *Provider) Update(ctx context.Context) error {
	var wg sync.WaitGroup
	var onDemandErr, spotErr error
	wg.Go(func() { onDemandErr = p.UpdateOnDemandPricing(ctx) })
	wg.Go(func() { spotErr = p.UpdateSpotPricing(ctx) })
	wg.Wait()
	return errors.Join(onDemandErr, spotErr)
}

// UpdateOnDemandPricing reads the region's Linux on-demand prices, shared
// tenancy and bare metal, and merges them into the table. It does nothing
// in an isolated VPC or GovCloud.
func (p *Provider) UpdateOnDemandPricing(ctx context.Context) error {
	if p.skipOnDemand {
		p.mu.Lock()
		first := !p.skipLogged
		p.skipLogged = true
		p.mu.Unlock()
		if first {
			log.FromContext(ctx).Info("not calling the Pricing API: using the embedded on-demand prices", "region", p.region)
		}
		return nil
	}
	var wg sync.WaitGroup
	var shared, metal map[string]float64
	var sharedErr, metalErr error
	wg.Go(func() { shared, sharedErr = p.onDemandPrices(ctx, "Shared", "Compute Instance") })
	wg.Go(func() { metal, metalErr = p.onDemandPrices(ctx, "Dedicated", "Compute Instance (bare metal)") })
	wg.Wait()
	if err := errors.Join(sharedErr, metalErr); err != nil {
		return fmt.Errorf("updating on-demand prices: %w", err)
	}
	if len(shared) == 0 || len(metal) == 0 {
		return errors.New("updating on-demand prices: no on-demand pricing found")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, prices := range []map[string]float64{shared, metal} {
		for name, price := range prices {
			p.onDemand[name] = price
		}
	}
	p.version++
	return nil
}

// onDemandPrices pages through one GetProducts query.
func (p *Provider) onDemandPrices(ctx context.Context, tenancy, productFamily string) (map[string]float64, error) {
	filters := map[string]string{
		"regionCode":      p.region,
		"serviceCode":     "AmazonEC2",
		"preInstalledSw":  "NA",
		"operatingSystem": "Linux",
		"capacitystatus":  "Used",
		"marketoption":    "OnDemand",
		"tenancy":         tenancy,
		"productFamily":   productFamily,
	}
	in := &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), MaxResults: aws.Int32(100)}
	for _, field := range []string{"regionCode", "serviceCode", "preInstalledSw", "operatingSystem", "capacitystatus", "marketoption", "tenancy", "productFamily"} {
		in.Filters = append(in.Filters, pricingtypes.Filter{Field: aws.String(field), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String(filters[field])})
	}
	currency := "USD"
	if strings.HasPrefix(p.region, "cn-") {
		currency = "CNY"
	}
	prices := map[string]float64{}
	paginator := pricing.NewGetProductsPaginator(p.pricing, in)
	for paginator.HasMorePages() {
		out, err := paginator.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("getting %s products: %w", productFamily, err)
		}
		for _, doc := range out.PriceList {
			name, price, ok := parsePriceList(doc, currency)
			if ok {
				prices[name] = price
			}
		}
	}
	return prices, nil
}

// priceListDocument is the part of a price-list JSON document read.
type priceListDocument struct {
	Product struct {
		Attributes struct {
			InstanceType string `json:"instanceType"`
		} `json:"attributes"`
	} `json:"product"`
	Terms struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// parsePriceList returns the instance type and on-demand hourly price of
// a price-list document; zero and unparsable prices are skipped.
func parsePriceList(doc, currency string) (string, float64, bool) {
	var d priceListDocument
	if err := json.Unmarshal([]byte(doc), &d); err != nil || d.Product.Attributes.InstanceType == "" {
		return "", 0, false
	}
	for _, term := range d.Terms.OnDemand {
		for _, dim := range term.PriceDimensions {
			price, err := strconv.ParseFloat(dim.PricePerUnit[currency], 64)
			if err != nil || price <= 0 {
				continue
			}
			return d.Product.Attributes.InstanceType, price, true
		}
	}
	return "", 0, false
}

// UpdateSpotPricing reads the current Linux spot price of every instance
// type in every zone and merges them into the table.
func (p *Provider) UpdateSpotPricing(ctx context.Context) error {
	type record struct {
		price float64
		at    time.Time
	}
	latest := map[string]map[string]record{}
	paginator := ec2.NewDescribeSpotPriceHistoryPaginator(p.ec2, &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: spotProductDescriptions,
		StartTime:           aws.Time(p.clock.Now()),
		MaxResults:          aws.Int32(1000),
	})
	for paginator.HasMorePages() {
		out, err := paginator.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("updating spot prices: %w", err)
		}
		for _, sp := range out.SpotPriceHistory {
			price, err := strconv.ParseFloat(aws.ToString(sp.SpotPrice), 64)
			if sp.Timestamp == nil || err != nil {
				continue
			}
			name, zone := string(sp.InstanceType), aws.ToString(sp.AvailabilityZone)
			if latest[name] == nil {
				latest[name] = map[string]record{}
			}
			if r, ok := latest[name][zone]; !ok || sp.Timestamp.After(r.at) {
				latest[name][zone] = record{price: price, at: *sp.Timestamp}
			}
		}
	}
	if len(latest) == 0 {
		return errors.New("updating spot prices: no spot pricing found")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, zones := range latest {
		if p.spot[name] == nil {
			p.spot[name] = map[string]float64{}
		}
		for zone, r := range zones {
			p.spot[name][zone] = r.price
		}
	}
	p.spotUpdated = true
	p.version++
	return nil
}
