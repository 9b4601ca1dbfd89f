package fake

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// catalogState holds the fake's instance types, their zonal offerings and spot price history.
type catalogState struct {
	// instanceTypes by name; DescribeInstanceTypes lists them sorted by name.
	instanceTypes map[string]ec2types.InstanceTypeInfo
	// offerings lists the zones each instance type is sold in.
	offerings map[string]map[OfferingZone]bool
	// spotPrices is the spot price history, in the order it was added.
	spotPrices []ec2types.SpotPrice
}

// OfferingZone is an availability zone by name and zone ID (us-west-2a,
// usw2-az1).
type OfferingZone struct {
	Name string
	ID   string
}

// AddInstanceTypes adds (or replaces, by name) instance types.
func (e *EC2) AddInstanceTypes(infos ...ec2types.InstanceTypeInfo) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.catalog.instanceTypes == nil {
		e.catalog.instanceTypes = map[string]ec2types.InstanceTypeInfo{}
	}
	for _, info := range infos {
		e.catalog.instanceTypes[string(info.InstanceType)] = info
	}
}

// RemoveInstanceTypes forgets instance types and their offerings.
func (e *EC2) RemoveInstanceTypes(names ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, name := range names {
		delete(e.catalog.instanceTypes, name)
		delete(e.catalog.offerings, name)
	}
}

// AddInstanceTypeOfferings offers instance types in zone.
func (e *EC2) AddInstanceTypeOfferings(zone OfferingZone, instanceTypes ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.catalog.offerings == nil {
		e.catalog.offerings = map[string]map[OfferingZone]bool{}
	}
	for _, name := range instanceTypes {
		if e.catalog.offerings[name] == nil {
			e.catalog.offerings[name] = map[OfferingZone]bool{}
		}
		e.catalog.offerings[name][zone] = true
	}
}

// RemoveInstanceTypeOffering stops offering instanceType in the zone named zoneName.
func (e *EC2) RemoveInstanceTypeOffering(instanceType, zoneName string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for zone := range e.catalog.offerings[instanceType] {
		if zone.Name == zoneName {
			delete(e.catalog.offerings[instanceType], zone)
		}
	}
}

// AddSpotPrices appends records to the spot price history.
func (e *EC2) AddSpotPrices(prices ...ec2types.SpotPrice) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.catalog.spotPrices = append(e.catalog.spotPrices, prices...)
}

// SetSpotPrice records a Linux/UNIX spot price for instanceType in zone, in
// effect from at.
func (e *EC2) SetSpotPrice(instanceType string, zone OfferingZone, price float64, at time.Time) {
	e.AddSpotPrices(ec2types.SpotPrice{
		AvailabilityZone:   ptr(zone.Name),
		AvailabilityZoneId: ptr(zone.ID),
		InstanceType:       ec2types.InstanceType(instanceType),
		ProductDescription: ec2types.RIProductDescriptionLinuxUnix,
		SpotPrice:          ptr(strconv.FormatFloat(price, 'f', 6, 64)),
		Timestamp:          ptr(at),
	})
}

// ClearSpotPrices forgets the spot price history.
func (e *EC2) ClearSpotPrices() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.catalog.spotPrices = nil
}

// DescribeInstanceTypes lists instance types sorted by name, honouring
// InstanceTypes, the filters supported-virtualization-type,
// processor-info.supported-architecture and instance-type, MaxResults
// (5..100) and NextToken. DryRun answers DryRunOperation.
func (e *EC2) DescribeInstanceTypes(_ context.Context, in *ec2.DescribeInstanceTypesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error) {
	if err := e.enterCall("DescribeInstanceTypes", in.DryRun); err != nil {
		return nil, err
	}
	e.mu.Lock()
	var matched []ec2types.InstanceTypeInfo
	for _, name := range sortedKeys(e.catalog.instanceTypes) {
		info := e.catalog.instanceTypes[name]
		if len(in.InstanceTypes) > 0 && !slices.Contains(in.InstanceTypes, info.InstanceType) {
			continue
		}
		ok, err := matchFilters(in.Filters, instanceTypeFields(info))
		if err != nil {
			e.mu.Unlock()
			return nil, err
		}
		if ok {
			matched = append(matched, info)
		}
	}
	e.mu.Unlock()
	items, next, err := page(matched, in.MaxResults, in.NextToken, 5, 100)
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeInstanceTypesOutput{InstanceTypes: items, NextToken: next}, nil
}

func instanceTypeFields(info ec2types.InstanceTypeInfo) filterFields {
	return func(name string) ([]string, bool) {
		var have []string
		switch name {
		case "supported-virtualization-type":
			for _, v := range info.SupportedVirtualizationTypes {
				have = append(have, string(v))
			}
		case "processor-info.supported-architecture":
			if info.ProcessorInfo != nil {
				for _, a := range info.ProcessorInfo.SupportedArchitectures {
					have = append(have, string(a))
				}
			}
		case "instance-type":
			have = []string{string(info.InstanceType)}
		default:
			return nil, false
		}
		return have, true
	}
}

// DescribeInstanceTypeOfferings lists (instance type, location) pairs for
// LocationType availability-zone (zone names) or availability-zone-id
// (zone IDs), honouring the filters location and instance-type, MaxResults
// (5..1000) and NextToken. The region location type (the default) lists
// each offered type once, located in the region "".
func (e *EC2) DescribeInstanceTypeOfferings(_ context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error) {
	if err := e.enterCall("DescribeInstanceTypeOfferings", in.DryRun); err != nil {
		return nil, err
	}
	locationType := in.LocationType
	if locationType == "" {
		locationType = ec2types.LocationTypeRegion
	}
	e.mu.Lock()
	var matched []ec2types.InstanceTypeOffering
	for _, name := range sortedKeys(e.catalog.offerings) {
		var locations []string
		for zone := range e.catalog.offerings[name] {
			switch locationType {
			case ec2types.LocationTypeAvailabilityZone:
				locations = append(locations, zone.Name)
			case ec2types.LocationTypeAvailabilityZoneId:
				locations = append(locations, zone.ID)
			default:
				locations = append(locations, "")
			}
		}
		slices.Sort(locations)
		for _, location := range slices.Compact(locations) {
			ok, err := matchFilters(in.Filters, offeringFields(name, location))
			if err != nil {
				e.mu.Unlock()
				return nil, err
			}
			if ok {
				matched = append(matched, ec2types.InstanceTypeOffering{InstanceType: ec2types.InstanceType(name), Location: ptr(location), LocationType: locationType})
			}
		}
	}
	e.mu.Unlock()
	items, next, err := page(matched, in.MaxResults, in.NextToken, 5, 1000)
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeInstanceTypeOfferingsOutput{InstanceTypeOfferings: items, NextToken: next}, nil
}

func offeringFields(instanceType, location string) filterFields {
	return func(name string) ([]string, bool) {
		switch name {
		case "location":
			return []string{location}, true
		case "instance-type":
			return []string{instanceType}, true
		}
		return nil, false
	}
}

// DescribeSpotPriceHistory lists spot prices newest first, honouring
// InstanceTypes, ProductDescriptions, AvailabilityZone, the filters
// instance-type, product-description and availability-zone,
// StartTime/EndTime, MaxResults and NextToken. As in EC2, with a StartTime
// the price in effect at that time (the latest record at or before it) is
// listed along with every later record.
func (e *EC2) DescribeSpotPriceHistory(_ context.Context, in *ec2.DescribeSpotPriceHistoryInput, _ ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error) {
	if err := e.enterCall("DescribeSpotPriceHistory", in.DryRun); err != nil {
		return nil, err
	}
	e.mu.Lock()
	history := slices.Clone(e.catalog.spotPrices)
	e.mu.Unlock()

	var matched []ec2types.SpotPrice
	for _, p := range history {
		ok, err := spotPriceMatches(p, in)
		if err != nil {
			return nil, err
		}
		if ok {
			matched = append(matched, p)
		}
	}
	if in.StartTime != nil {
		matched = inEffectFrom(matched, *in.StartTime)
	}
	slices.SortStableFunc(matched, func(a, b ec2types.SpotPrice) int {
		if c := deref(b.Timestamp).Compare(deref(a.Timestamp)); c != 0 {
			return c
		}
		return cmp.Or(strings.Compare(string(a.InstanceType), string(b.InstanceType)), strings.Compare(deref(a.AvailabilityZone), deref(b.AvailabilityZone)))
	})
	items, next, err := page(matched, in.MaxResults, in.NextToken, 5, 10000)
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeSpotPriceHistoryOutput{SpotPriceHistory: items, NextToken: next}, nil
}

func spotPriceMatches(p ec2types.SpotPrice, in *ec2.DescribeSpotPriceHistoryInput) (bool, error) {
	if len(in.InstanceTypes) > 0 && !slices.Contains(in.InstanceTypes, p.InstanceType) {
		return false, nil
	}
	if len(in.ProductDescriptions) > 0 && !slices.Contains(in.ProductDescriptions, string(p.ProductDescription)) {
		return false, nil
	}
	if in.AvailabilityZone != nil && deref(in.AvailabilityZone) != deref(p.AvailabilityZone) {
		return false, nil
	}
	if in.EndTime != nil && deref(p.Timestamp).After(*in.EndTime) {
		return false, nil
	}
	return matchFilters(in.Filters, func(name string) ([]string, bool) {
		switch name {
		case "instance-type":
			return []string{string(p.InstanceType)}, true
		case "product-description":
			return []string{string(p.ProductDescription)}, true
		case "availability-zone":
			return []string{deref(p.AvailabilityZone)}, true
		}
		return nil, false
	})
}

// inEffectFrom keeps, per (instance type, zone, product), the latest record
// at or before start, and every record after it.
func inEffectFrom(prices []ec2types.SpotPrice, start time.Time) []ec2types.SpotPrice {
	type key struct{ instanceType, zone, product string }
	latest := map[key]int{}
	var out []ec2types.SpotPrice
	for i, p := range prices {
		ts := deref(p.Timestamp)
		if ts.After(start) {
			out = append(out, p)
			continue
		}
		k := key{string(p.InstanceType), deref(p.AvailabilityZone), string(p.ProductDescription)}
		if j, ok := latest[k]; !ok || !deref(prices[j].Timestamp).After(ts) {
			latest[k] = i
		}
	}
	for _, i := range latest {
		out = append(out, prices[i])
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
