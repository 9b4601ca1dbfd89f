package instancetype

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/cache"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instancetype/kubeletcel"
)

// ResolvedTTL is how long the instance types resolved for one class shape
// are reused while EC2 data, prices and unavailable offerings stay the same.
const ResolvedTTL = 5 * time.Minute

// ec2API is the EC2 calls the provider makes.
type ec2API interface {
	DescribeInstanceTypes(ctx context.Context, in *ec2.DescribeInstanceTypesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeInstanceTypeOfferings(ctx context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
}

// pricer answers prices (package pricing's Provider).
type pricer interface {
	OnDemandPrice(instanceType string) (float64, bool)
	SpotPrice(instanceType, zone string) (float64, bool)
	// Version changes whenever a price may have changed.
	Version() uint64
}

// reservationCounter tells how many more instances a capacity reservation
// holds (package capacityreservation's Provider).
type reservationCounter interface {
	AvailableInstanceCount(id string) (int, bool)
}

// Options are the provider's settings (see package options).
type Options struct {
	// Region labels every type (topology.kubernetes.io/region).
	Region string
	// VMMemoryOverheadPercent of memory is taken off each type's capacity.
	VMMemoryOverheadPercent float64
	// ReservedENIs are left out of the ENI-limited max pods.
	ReservedENIs int
	// KubeletExpressions evaluates CEL expressions in spec.kubelet
	// (maxPods). nil is the NodeClassCEL AWS feature gate off: an
	// expression is then ignored, the family's default applies, and the
	// class is not valid (as upstream).
	KubeletExpressions *kubeletcel.Environment
}

// Provider lists the instance types an EC2NodeClass can launch. It is safe
// for concurrent use.
type Provider struct {
	ec2         ec2API
	prices      pricer
	unavailable *cache.UnavailableOfferings
	// reservations counts what the class's capacity reservations hold; nil
	// assumes one instance each.
	reservations reservationCounter
	opts         Options
	clock        clock.PassiveClock

	mu sync.RWMutex
	// infos and offered are EC2's answers; dataVersion moves when either
	// changes.
	infos       map[string]*ec2types.InstanceTypeInfo
	offered     map[string]map[string]bool
	dataVersion uint64
	resolved    map[uint64]*resolvedEntry

	// discovered are the memory capacities registered Nodes reported
	// (RecordMemoryCapacity); discoveredVersion moves when one changes.
	discoveredMu      sync.Mutex
	discovered        map[discoveredKey]discoveredMemory
	discoveredVersion uint64
}

// resolvedEntry is one class shape's instance types and what they were
// built from: seqs holds each type's unavailable-offerings sequence number.
type resolvedEntry struct {
	types              []*cloudprovider.InstanceType
	seqs               []uint64
	dataVersion        uint64
	unavailableVersion uint64
	priceVersion       uint64
	discoveredVersion  uint64
	expires            time.Time
}

// NewProvider returns a provider with no EC2 data; call Update before List.
// reservations may be nil (reserved offerings then hold one instance each).
func NewProvider(ec2Client ec2API, prices pricer, unavailable *cache.UnavailableOfferings, reservations reservationCounter, opts Options, clk clock.PassiveClock) *Provider {
	return &Provider{
		ec2: ec2Client, prices: prices, unavailable: unavailable, reservations: reservations, opts: opts, clock: clk,
		resolved: map[uint64]*resolvedEntry{}, discovered: map[discoveredKey]discoveredMemory{},
	}
}

// Update refreshes instance types and their zonal offerings from EC2 in
// parallel; on error the previous data is kept.
func (p *Provider) Update(ctx context.Context) error {
	var wg sync.WaitGroup
	var typesErr, offeringsErr error
	wg.Go(func() { typesErr = p.UpdateInstanceTypes(ctx) })
	wg.Go(func() { offeringsErr = p.UpdateInstanceTypeOfferings(ctx) })
	wg.Wait()
	return errors.Join(typesErr, offeringsErr)
}

// UpdateInstanceTypes reads every HVM x86_64 and arm64 instance type.
func (p *Provider) UpdateInstanceTypes(ctx context.Context) error {
	infos := map[string]*ec2types.InstanceTypeInfo{}
	paginator := ec2.NewDescribeInstanceTypesPaginator(p.ec2, &ec2.DescribeInstanceTypesInput{
		MaxResults: aws.Int32(100),
		Filters: []ec2types.Filter{
			{Name: aws.String("supported-virtualization-type"), Values: []string{string(ec2types.VirtualizationTypeHvm)}},
			{Name: aws.String("processor-info.supported-architecture"), Values: []string{string(ec2types.ArchitectureTypeX8664), string(ec2types.ArchitectureTypeArm64)}},
		},
	})
	for paginator.HasMorePages() {
		out, err := paginator.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("describing instance types: %w", err)
		}
		for i := range out.InstanceTypes {
			info := out.InstanceTypes[i]
			if info.VCpuInfo == nil || info.MemoryInfo == nil {
				continue
			}
			infos[string(info.InstanceType)] = &info
		}
	}
	if len(infos) == 0 {
		return errors.New("describing instance types: no instance types found")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !maps.EqualFunc(p.infos, infos, infosEqual) {
		p.infos = infos
		p.dataVersion++
	}
	return nil
}

// UpdateInstanceTypeOfferings reads which zones offer which types.
func (p *Provider) UpdateInstanceTypeOfferings(ctx context.Context) error {
	offered := map[string]map[string]bool{}
	paginator := ec2.NewDescribeInstanceTypeOfferingsPaginator(p.ec2, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone,
		MaxResults:   aws.Int32(1000),
	})
	for paginator.HasMorePages() {
		out, err := paginator.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("describing instance type offerings: %w", err)
		}
		for _, o := range out.InstanceTypeOfferings {
			name := string(o.InstanceType)
			if offered[name] == nil {
				offered[name] = map[string]bool{}
			}
			offered[name][aws.ToString(o.Location)] = true
		}
	}
	if len(offered) == 0 {
		return errors.New("describing instance type offerings: no instance type offerings found")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !maps.EqualFunc(p.offered, offered, maps.Equal) {
		p.offered = offered
		p.dataVersion++
	}
	return nil
}

// List returns the instance types nodeClass can launch, sorted by name:
// every type offered in one of its subnets' zones, with its offerings there
// (including unavailable ones).
func (p *Provider) List(ctx context.Context, nodeClass *awsv1.EC2NodeClass) ([]*cloudprovider.InstanceType, error) {
	if len(nodeClass.Status.Subnets) == 0 {
		return nil, errors.New("listing instance types: no subnets found")
	}
	key, err := shapeKey(nodeClass)
	if err != nil {
		return nil, fmt.Errorf("listing instance types: %w", err)
	}
	unavailableVersion, priceVersion, discoveredVersion := p.unavailable.Version(), p.prices.Version(), p.currentDiscoveredVersion()

	p.mu.RLock()
	e := p.resolved[key]
	fresh := e != nil && e.dataVersion == p.dataVersion && e.priceVersion == priceVersion && e.discoveredVersion == discoveredVersion &&
		p.clock.Now().Before(e.expires)
	if fresh && e.unavailableVersion == unavailableVersion {
		p.mu.RUnlock()
		return p.withReservationCounts(e.types), nil
	}
	infos, offered, dataVersion := p.infos, p.offered, p.dataVersion
	p.mu.RUnlock()

	if len(infos) == 0 {
		return nil, errors.New("listing instance types: no instance types found")
	}
	if len(offered) == 0 {
		return nil, errors.New("listing instance types: no instance type offerings found")
	}
	r, err := p.newResolver(nodeClass, infos, offered)
	if err != nil {
		return nil, err
	}
	next := &resolvedEntry{
		dataVersion: dataVersion, unavailableVersion: unavailableVersion, priceVersion: priceVersion,
		discoveredVersion: r.discoveredVersion, expires: p.clock.Now().Add(ResolvedTTL),
	}
	if fresh {
		// Only unavailable offerings changed: rebuild the types whose marks
		// moved and share the others.
		next.expires = e.expires
		next.types = slices.Clone(e.types)
		next.seqs = make([]uint64, len(e.types))
		for i, it := range e.types {
			next.seqs[i] = p.unavailable.SeqNum(it.Name)
			if next.seqs[i] != e.seqs[i] {
				next.types[i] = r.build(it.Name)
			}
		}
	} else {
		next.types, next.seqs = r.all()
	}
	p.mu.Lock()
	now := p.clock.Now()
	for k, old := range p.resolved {
		// Shapes no class has listed for a TTL (a class changed or went).
		if !now.Before(old.expires) {
			delete(p.resolved, k)
		}
	}
	p.resolved[key] = next
	p.mu.Unlock()
	return p.withReservationCounts(next.types), nil
}

// withReservationCounts returns types with each reserved offering holding
// its reservation's current count. The counts change with every launch and
// termination, so they are never cached: the types with reserved offerings
// are copied, the others shared.
func (p *Provider) withReservationCounts(types []*cloudprovider.InstanceType) []*cloudprovider.InstanceType {
	if p.reservations == nil {
		return types
	}
	var out []*cloudprovider.InstanceType
	for i, it := range types {
		if !slices.ContainsFunc(it.Offerings, func(o *cloudprovider.Offering) bool { return o.ReservationID != "" }) {
			continue
		}
		if out == nil {
			out = slices.Clone(types)
		}
		cp := *it
		cp.Requirements = it.Requirements.Copy()
		cp.Offerings = make([]*cloudprovider.Offering, len(it.Offerings))
		for j, o := range it.Offerings {
			oc := *o
			if oc.ReservationID != "" {
				count, _ := p.reservations.AvailableInstanceCount(oc.ReservationID)
				oc.ReservationCapacity = count
			}
			cp.Offerings[j] = &oc
		}
		cp.RefreshOfferingRequirements()
		out[i] = &cp
	}
	if out == nil {
		return types
	}
	return out
}

// Get returns one of List's instance types by name.
func (p *Provider) Get(ctx context.Context, nodeClass *awsv1.EC2NodeClass, name string) (*cloudprovider.InstanceType, error) {
	types, err := p.List(ctx, nodeClass)
	if err != nil {
		return nil, err
	}
	for _, it := range types {
		if it.Name == name {
			return it, nil
		}
	}
	return nil, fmt.Errorf("instance type %q not found", name)
}

// KubeletExpressions is the CEL environment kubelet expressions are
// evaluated in, nil with the NodeClassCEL gate off.
func (p *Provider) KubeletExpressions() *kubeletcel.Environment { return p.opts.KubeletExpressions }

// Flush forgets every resolved instance type (EC2 data is kept).
func (p *Provider) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.resolved)
}

// shapeKey hashes what of a class changes its instance types: the AMI
// family and resolved AMIs (memory learnt from Nodes is per AMI set),
// kubelet settings, volumes, instance store policy, network interfaces,
// zones, capacity reservations, placement group, CPU options (nested
// virtualization) and connection tracking (Nitro only).
func shapeKey(nodeClass *awsv1.EC2NodeClass) (uint64, error) {
	shape := struct {
		Family               string
		AMIs                 uint64
		Kubelet              *awsv1.KubeletConfiguration
		BlockDevices         []*awsv1.BlockDeviceMapping
		InstanceStorePolicy  *awsv1.InstanceStorePolicy
		NetworkInterfaces    []*awsv1.NetworkInterface
		Zones                []awsv1.ZoneInfo
		CapacityReservations []awsv1.CapacityReservation
		PlacementGroup       *awsv1.PlacementGroup
		CPUOptions           *awsv1.CPUOptions
		ConnectionTracking   *awsv1.ConnectionTracking
	}{
		nodeClass.AMIFamily(), amisHash(nodeClass.Status.AMIs), nodeClass.Spec.Kubelet, nodeClass.Spec.BlockDeviceMappings, nodeClass.Spec.InstanceStorePolicy,
		nodeClass.Spec.NetworkInterfaces, nodeClass.ZoneInfo(), nodeClass.Status.CapacityReservations, nodeClass.Status.PlacementGroup,
		nodeClass.Spec.CPUOptions, nodeClass.Spec.ConnectionTracking,
	}
	b, err := json.Marshal(shape)
	if err != nil {
		return 0, fmt.Errorf("hashing the EC2NodeClass: %w", err)
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	return h.Sum64(), nil
}

func infosEqual(a, b *ec2types.InstanceTypeInfo) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && slices.Equal(ja, jb)
}
