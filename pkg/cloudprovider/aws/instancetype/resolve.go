package instancetype

import (
	"slices"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// reservedPriceDivisor makes a reserved offering cheaper than any other
// (its instances are already paid for) while keeping the order of types.
const reservedPriceDivisor = 10_000_000

// resolver builds the instance types of one class from one snapshot of
// EC2 data.
type resolver struct {
	p            *Provider
	nodeClass    *awsv1.EC2NodeClass
	sizing       sizing
	zones        []awsv1.ZoneInfo
	reservations map[string][]awsv1.CapacityReservation
	static       *staticTables
	infos        map[string]*ec2types.InstanceTypeInfo
	offered      map[string]map[string]bool
	// discovered are the memory capacities Nodes booted from the class's
	// AMIs reported, by type, as of discoveredVersion.
	discovered        map[string]resource.Quantity
	discoveredVersion uint64
}

func (p *Provider) newResolver(nodeClass *awsv1.EC2NodeClass, infos map[string]*ec2types.InstanceTypeInfo, offered map[string]map[string]bool) (*resolver, error) {
	static, err := loadStaticTables()
	if err != nil {
		return nil, err
	}
	family := nodeClass.AMIFamily()
	r := &resolver{
		p:         p,
		nodeClass: nodeClass,
		sizing: sizing{
			traits:                  traitsOf(family),
			windows:                 windowsBuilds[family] != "",
			vmMemoryOverheadPercent: p.opts.VMMemoryOverheadPercent,
			reservedENIs:            int64(p.opts.ReservedENIs),
			kubelet:                 nodeClass.Spec.Kubelet,
			blockDevices:            nodeClass.Spec.BlockDeviceMappings,
			instanceStorePolicy:     nodeClass.Spec.InstanceStorePolicy,
			networkInterfaces:       nodeClass.Spec.NetworkInterfaces,
		},
		zones:        nodeClass.ZoneInfo(),
		reservations: map[string][]awsv1.CapacityReservation{},
		static:       static,
		infos:        infos,
		offered:      offered,
	}
	r.discovered, r.discoveredVersion = p.discoveredFor(nodeClass.Status.AMIs)
	for _, cr := range nodeClass.Status.CapacityReservations {
		r.reservations[cr.InstanceType] = append(r.reservations[cr.InstanceType], cr)
	}
	return r, nil
}

// all builds every type offered in one of the class's zones, sorted by
// name, with each type's unavailable-offerings sequence number read before
// it was built (a mark racing the build then triggers a rebuild).
func (r *resolver) all() ([]*cloudprovider.InstanceType, []uint64) {
	names := make([]string, 0, len(r.infos))
	for name := range r.infos {
		names = append(names, name)
	}
	slices.Sort(names)
	types := make([]*cloudprovider.InstanceType, 0, len(names))
	seqs := make([]uint64, 0, len(names))
	for _, name := range names {
		seq := r.p.unavailable.SeqNum(name)
		if it := r.build(name); it != nil {
			types = append(types, it)
			seqs = append(seqs, seq)
		}
	}
	return types, seqs
}

// build builds one type, or returns nil when no zone of the class offers it
// or the class's maxPods expression fails for it.
func (r *resolver) build(name string) *cloudprovider.InstanceType {
	info := r.infos[name]
	var zones []awsv1.ZoneInfo
	var zoneIDs []string
	for _, z := range r.zones {
		if r.offered[name][z.Zone] {
			zones = append(zones, z)
			if z.ZoneID != "" {
				zoneIDs = append(zoneIDs, z.ZoneID)
			}
		}
	}
	if info == nil || len(zones) == 0 {
		return nil
	}
	sizing, ok := r.sizing.forType(info, r.p.opts.KubeletExpressions)
	if !ok {
		return nil
	}
	capacity := sizing.capacity(info, r.static)
	if memory, ok := r.discovered[name]; ok {
		// What Nodes of this type and AMIs report replaces the estimate;
		// allocatable follows from it.
		capacity[corev1.ResourceMemory] = memory
	}
	it := &cloudprovider.InstanceType{
		Name:         name,
		Requirements: requirements(info, r.nodeClass.AMIFamily(), r.p.opts.Region, zoneIDs, r.reservations[name], r.static),
		Capacity:     capacity,
		Allocatable:  sizing.allocatable(info, capacity),
		Offerings:    r.p.offerings(info, r.nodeClass, zones, r.reservations[name]),
	}
	it.Requirements[corev1.LabelInstanceTypeStable] = scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, name)
	withPlacementGroup(it, r.nodeClass.Status.PlacementGroup, info)
	it.RefreshOfferingRequirements()
	return it
}

// offerings are the on-demand and spot offerings of the type in each zone,
// then one reserved offering per capacity reservation. An offering is
// available when the type is compatible with the class, it has a price,
// its zone is under no ARC zonal shift, and neither it (in general or
// inside the class's placement group), its capacity type nor every subnet
// of its zone was recently refused.
func (p *Provider) offerings(info *ec2types.InstanceTypeInfo, nodeClass *awsv1.EC2NodeClass, zones []awsv1.ZoneInfo, reservations []awsv1.CapacityReservation) []*cloudprovider.Offering {
	name := string(info.InstanceType)
	compatible := compatible(info, nodeClass)
	group := ""
	if g := nodeClass.Status.PlacementGroup; g != nil {
		group = g.ID
	}
	var out []*cloudprovider.Offering
	for _, z := range zones {
		zoneUsable := compatible && !p.allSubnetsUnavailable(z) && !p.unavailable.IsZoneShifted(z.ZoneID)
		for _, capacityType := range capacityTypes(info) {
			var price float64
			var priced bool
			if capacityType == scheduling.CapacityTypeSpot {
				price, priced = p.prices.SpotPrice(name, z.Zone)
			} else {
				price, priced = p.prices.OnDemandPrice(name)
			}
			out = append(out, &cloudprovider.Offering{
				Zone:         z.Zone,
				CapacityType: capacityType,
				Price:        price,
				Available:    zoneUsable && priced && !p.unavailable.IsUnavailableIn(name, z.Zone, capacityType, group),
			})
		}
	}
	onDemand, _ := p.prices.OnDemandPrice(name)
	for _, r := range reservations {
		inZone := slices.ContainsFunc(zones, func(z awsv1.ZoneInfo) bool {
			return z.Zone == r.AvailabilityZone && !p.unavailable.IsZoneShifted(z.ZoneID)
		})
		out = append(out, &cloudprovider.Offering{
			Zone:                r.AvailabilityZone,
			CapacityType:        scheduling.CapacityTypeRsv,
			Price:               onDemand / reservedPriceDivisor,
			Available:           compatible && inZone && r.State != "expiring",
			ReservationID:       r.ID,
			ReservationCapacity: 1,
		})
	}
	return out
}

// capacityTypes are the type's usage classes karp launches.
func capacityTypes(info *ec2types.InstanceTypeInfo) []string {
	var out []string
	for _, uc := range []ec2types.UsageClassType{ec2types.UsageClassTypeOnDemand, ec2types.UsageClassTypeSpot} {
		if slices.Contains(info.SupportedUsageClasses, uc) {
			out = append(out, string(uc))
		}
	}
	return out
}

// allSubnetsUnavailable reports whether every subnet of the zone ran out
// of addresses recently.
func (p *Provider) allSubnetsUnavailable(z awsv1.ZoneInfo) bool {
	for _, id := range z.SubnetIDs {
		if !p.unavailable.IsSubnetUnavailable(id) {
			return false
		}
	}
	return len(z.SubnetIDs) > 0
}

// compatible reports whether the class can launch the type at all: AL2023
// does not boot on a1 instances, nested virtualization needs a type that
// supports it, connection tracking timeouts need a Nitro type, and an
// explicit network interface layout must fit the type's network cards and
// EFA interfaces (upstream's compatibility checks; an incompatible type's
// offerings are unavailable, as upstream marks them).
func compatible(info *ec2types.InstanceTypeInfo, nodeClass *awsv1.EC2NodeClass) bool {
	if nodeClass.AMIFamily() == awsv1.AMIFamilyAL2023 && strings.HasPrefix(string(info.InstanceType), "a1.") {
		return false
	}
	if nodeClass.NestedVirtualization() && (info.ProcessorInfo == nil ||
		!slices.Contains(info.ProcessorInfo.SupportedFeatures, ec2types.SupportedAdditionalProcessorFeatureNestedVirtualization)) {
		return false
	}
	if nodeClass.Spec.ConnectionTracking != nil && info.Hypervisor != ec2types.InstanceTypeHypervisorNitro {
		return false
	}
	nifs := nodeClass.Spec.NetworkInterfaces
	if len(nifs) == 0 {
		return true
	}
	ni := info.NetworkInfo
	if ni == nil || len(ni.NetworkCards) == 0 || ni.EnaSupport == ec2types.EnaSupportUnsupported {
		return false
	}
	var efaOnly int32
	for _, nif := range nifs {
		if int(nif.NetworkCardIndex) >= len(ni.NetworkCards) {
			return false
		}
		card := ni.NetworkCards[nif.NetworkCardIndex]
		if nif.DeviceIndex >= deref(card.MaximumNetworkInterfaces) {
			return false
		}
		if nif.InterfaceType == awsv1.InterfaceTypeEFAOnly {
			efaOnly++
		}
	}
	if efaOnly > 0 && (ni.EfaInfo == nil || efaOnly > deref(ni.EfaInfo.MaximumEfaInterfaces)) {
		return false
	}
	return true
}
