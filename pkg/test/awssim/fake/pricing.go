package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
)

// Pricing is a stateful fake of the AWS Price List Query API's GetProducts
// for the AmazonEC2 service: it holds products (attribute sets with an
// on-demand price) and answers with PriceList JSON documents shaped as
// AWS's.
type Pricing struct {
	Faults

	mu       sync.Mutex
	products []Product
}

// Product is one price-list product: its attributes (instanceType,
// regionCode, tenancy, operatingSystem, ...) and its on-demand price per
// hour by currency (USD, CNY).
type Product struct {
	SKU           string
	ProductFamily string
	Attributes    map[string]string
	PricePerUnit  map[string]string
}

// NewPricing returns a fake with no products.
func NewPricing() *Pricing {
	return &Pricing{}
}

// AddProducts adds products.
func (p *Pricing) AddProducts(products ...Product) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.products = append(p.products, products...)
}

// ClearProducts forgets every product.
func (p *Pricing) ClearProducts() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.products = nil
}

// SetOnDemandPrice adds the shared-tenancy Linux on-demand product of
// instanceType in region at price USD per hour. Metal sizes are also listed
// as the dedicated "Compute Instance (bare metal)" product, as AWS does.
func (p *Pricing) SetOnDemandPrice(region, instanceType string, price float64) {
	p.AddProducts(OnDemandProduct(region, instanceType, "Shared", "Compute Instance", "USD", price))
	if strings.Contains(instanceType, "metal") {
		p.AddProducts(OnDemandProduct(region, instanceType, "Dedicated", "Compute Instance (bare metal)", "USD", price))
	}
}

// OnDemandProduct is a Linux, no-preinstalled-software, used-capacity
// on-demand EC2 product.
func OnDemandProduct(region, instanceType, tenancy, productFamily, currency string, price float64) Product {
	sku := fmt.Sprintf("%X", fnv32(region+instanceType+tenancy+productFamily))
	return Product{
		SKU:           sku,
		ProductFamily: productFamily,
		Attributes: map[string]string{
			"servicecode":     "AmazonEC2",
			"instanceType":    instanceType,
			"regionCode":      region,
			"tenancy":         tenancy,
			"operatingSystem": "Linux",
			"preInstalledSw":  "NA",
			"capacitystatus":  "Used",
			"marketoption":    "OnDemand",
			"productFamily":   productFamily,
			"licenseModel":    "No License required",
		},
		PricePerUnit: map[string]string{currency: strconv.FormatFloat(price, 'f', 10, 64)},
	}
}

// GetProducts answers the AmazonEC2 products whose attributes match every
// filter (TERM_MATCH and EQUALS compare the value exactly; field names are
// case-insensitive), paginated by MaxResults (1..100, default 100) and
// NextToken.
func (p *Pricing) GetProducts(_ context.Context, in *pricing.GetProductsInput, _ ...func(*pricing.Options)) (*pricing.GetProductsOutput, error) {
	if err := p.enter("GetProducts"); err != nil {
		return nil, err
	}
	if deref(in.ServiceCode) == "" {
		return nil, APIError("InvalidParameterException", "ServiceCode is required")
	}
	p.mu.Lock()
	products := slices.Clone(p.products)
	p.mu.Unlock()

	var matched []Product
	for _, product := range products {
		if !strings.EqualFold(product.Attributes["servicecode"], deref(in.ServiceCode)) {
			continue
		}
		ok, err := productMatches(product, in.Filters)
		if err != nil {
			return nil, err
		}
		if ok {
			matched = append(matched, product)
		}
	}
	maxResults := in.MaxResults
	if maxResults == nil {
		maxResults = ptr(int32(100))
	}
	// Only the page's products are rendered: rendering every match for
	// each page made a full listing of the catalog's 1,400 products
	// render 20,000 documents.
	onPage, next, err := page(matched, maxResults, in.NextToken, 1, 100)
	if err != nil {
		return nil, err
	}
	items := make([]string, 0, len(onPage))
	for _, product := range onPage {
		doc, err := product.priceListDocument()
		if err != nil {
			return nil, err
		}
		items = append(items, doc)
	}
	return &pricing.GetProductsOutput{FormatVersion: ptr("aws_v1"), PriceList: items, NextToken: next}, nil
}

func productMatches(product Product, filters []pricingtypes.Filter) (bool, error) {
	for _, f := range filters {
		switch f.Type {
		case pricingtypes.FilterTypeTermMatch, pricingtypes.FilterTypeEquals:
		default:
			return false, APIError("InvalidParameterException", fmt.Sprintf("filter type %s is not supported by this fake", f.Type))
		}
		field := deref(f.Field)
		have, ok := product.Attributes[field]
		if !ok {
			// Field names are case-insensitive.
			for k, v := range product.Attributes {
				if strings.EqualFold(k, field) {
					have = v
				}
			}
		}
		if have != deref(f.Value) {
			return false, nil
		}
	}
	return true, nil
}

// priceListDocument renders the product as AWS's price-list JSON: the
// product with its attributes and one OnDemand term with one hourly price
// dimension.
func (product Product) priceListDocument() (string, error) {
	term := product.SKU + ".JRTCKXETXF"
	doc := map[string]any{
		"product": map[string]any{
			"productFamily": product.ProductFamily,
			"attributes":    product.Attributes,
			"sku":           product.SKU,
		},
		"serviceCode":     product.Attributes["servicecode"],
		"version":         "20261101000000",
		"publicationDate": "2026-11-01T00:00:00Z",
		"terms": map[string]any{
			"OnDemand": map[string]any{
				term: map[string]any{
					"offerTermCode": "JRTCKXETXF",
					"sku":           product.SKU,
					"effectiveDate": "2026-11-01T00:00:00Z",
					"priceDimensions": map[string]any{
						term + ".6YS6EN2CT7": map[string]any{
							"rateCode":     term + ".6YS6EN2CT7",
							"unit":         "Hrs",
							"description":  fmt.Sprintf("On Demand %s %s Instance Hour", product.Attributes["operatingSystem"], product.Attributes["instanceType"]),
							"beginRange":   "0",
							"endRange":     "Inf",
							"pricePerUnit": product.PricePerUnit,
							"appliesTo":    []string{},
						},
					},
					"termAttributes": map[string]string{},
				},
			},
		},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("encoding price list document: %w", err)
	}
	return string(b), nil
}

// fnv32 hashes s (FNV-1a) for stable fake SKUs.
func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// SeedCatalogOnDemandPrices adds the on-demand product of every priced type
// of a karp catalog in region.
func (p *Pricing) SeedCatalogOnDemandPrices(region string, data []byte) error {
	prices, err := CatalogOnDemandPrices(data)
	if err != nil {
		return err
	}
	for name, price := range prices {
		p.SetOnDemandPrice(region, name, price)
	}
	return nil
}
