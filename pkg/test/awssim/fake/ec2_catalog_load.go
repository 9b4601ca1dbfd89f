package fake

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/catalog"
)

// Label keys of the karp catalog format the loader reads.
const (
	catalogLabelArch            = "kubernetes.io/arch"
	catalogLabelCPU             = "karpenter.k8s.aws/instance-cpu"
	catalogLabelCPUManufacturer = "karpenter.k8s.aws/instance-cpu-manufacturer"
	catalogLabelClockMHz        = "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz"
	catalogLabelMemory          = "karpenter.k8s.aws/instance-memory"
	catalogLabelEBSBandwidth    = "karpenter.k8s.aws/instance-ebs-bandwidth"
	catalogLabelEncryption      = "karpenter.k8s.aws/instance-encryption-in-transit-supported"
	catalogLabelHypervisor      = "karpenter.k8s.aws/instance-hypervisor"
	catalogLabelLocalNVMe       = "karpenter.k8s.aws/instance-local-nvme"
	catalogLabelSize            = "karpenter.k8s.aws/instance-size"
	catalogLabelGPUName         = "karpenter.k8s.aws/instance-gpu-name"
	catalogLabelGPUManufacturer = "karpenter.k8s.aws/instance-gpu-manufacturer"
	catalogLabelGPUCount        = "karpenter.k8s.aws/instance-gpu-count"
	catalogLabelGPUMemory       = "karpenter.k8s.aws/instance-gpu-memory"
	catalogLabelAccelName       = "karpenter.k8s.aws/instance-accelerator-name"
	catalogLabelAccelCount      = "karpenter.k8s.aws/instance-accelerator-count"
)

// eniIPv4Choices are the IPv4-addresses-per-interface values EC2 instance
// types have, in the order the loader tries them (see enisFromPods).
var eniIPv4Choices = []int32{64, 50, 40, 30, 20, 15, 12, 10, 6, 5, 4, 3, 2}

// decodedCatalogs are the catalogs decodeCatalog has read, by their
// content: every Account seeds from the same embedded catalog, three or
// four times, and decoding its 1,400 types was a tenth of an AWS
// integration package's CPU.
var decodedCatalogs = struct {
	sync.Mutex
	byData map[string]*catalog.File
}{byData: map[string]*catalog.File{}}

// decodeCatalog decodes a karp catalog, once per data. The File is
// shared: callers only read it.
func decodeCatalog(data []byte) (*catalog.File, error) {
	decodedCatalogs.Lock()
	defer decodedCatalogs.Unlock()
	if f, ok := decodedCatalogs.byData[string(data)]; ok {
		return f, nil
	}
	f := &catalog.File{}
	if err := json.Unmarshal(data, f); err != nil {
		return nil, fmt.Errorf("decoding catalog: %w", err)
	}
	decodedCatalogs.byData[string(data)] = f
	return f, nil
}

// CatalogInstanceTypes builds DescribeInstanceTypes records from a karp
// catalog of EC2 types (pkg/cloudprovider/kwok/instancetypes, whose labels
// and allocatable are the AWS provider's published values). The labels give
// vCPUs, memory, architecture, CPU manufacturer and clock, hypervisor, EBS
// bandwidth, encryption in transit, local NVMe, GPUs and Neuron devices;
// the allocatable gives EFA interfaces.
//
// ENI limits are not in the catalog. They are derived from the published
// max pods, which the provider computes as ENIs × (IPv4 per ENI − 1) + 2:
// the IPv4-per-ENI is the first of 64, 50, 40, 30, 20, 15, 12, 10, 6, 5, 4,
// 3, 2 that divides pods − 2 with 2 to 24 ENIs. This reproduces EC2's
// figures for most types (m5.large 3×10, m5.4xlarge 8×30, c5.18xlarge
// 15×50) and the published max pods for every type by construction. Types
// with EFA get one network card per EFA interface, each with that many
// ENIs; the default card is 0.
func CatalogInstanceTypes(data []byte) ([]ec2types.InstanceTypeInfo, error) {
	f, err := decodeCatalog(data)
	if err != nil {
		return nil, err
	}
	out := make([]ec2types.InstanceTypeInfo, 0, len(f.InstanceTypes))
	for _, it := range f.InstanceTypes {
		info, err := catalogInstanceType(it)
		if err != nil {
			return nil, fmt.Errorf("instance type %s: %w", it.Name, err)
		}
		out = append(out, info)
	}
	return out, nil
}

// CatalogOnDemandPrices returns the catalog's on-demand price per hour by
// instance type (types without a price are absent).
func CatalogOnDemandPrices(data []byte) (map[string]float64, error) {
	f, err := decodeCatalog(data)
	if err != nil {
		return nil, err
	}
	prices := map[string]float64{}
	for _, it := range f.InstanceTypes {
		if it.OnDemandPricePerHour != nil {
			prices[it.Name] = *it.OnDemandPricePerHour
		}
	}
	return prices, nil
}

// SeedCatalog adds the instance types and offers each of them in every zone.
func (e *EC2) SeedCatalog(infos []ec2types.InstanceTypeInfo, zones ...OfferingZone) {
	e.AddInstanceTypes(infos...)
	names := make([]string, 0, len(infos))
	for _, info := range infos {
		names = append(names, string(info.InstanceType))
	}
	for _, zone := range zones {
		e.AddInstanceTypeOfferings(zone, names...)
	}
}

func catalogInstanceType(it catalog.InstanceType) (ec2types.InstanceTypeInfo, error) {
	labels := it.Labels
	vcpus, err := atoi32(labels[catalogLabelCPU])
	if err != nil {
		return ec2types.InstanceTypeInfo{}, fmt.Errorf("%s: %w", catalogLabelCPU, err)
	}
	memory, err := strconv.ParseInt(labels[catalogLabelMemory], 10, 64)
	if err != nil {
		return ec2types.InstanceTypeInfo{}, fmt.Errorf("%s: %w", catalogLabelMemory, err)
	}
	pods := it.Allocatable.Pods().Value()
	enis, ipv4, err := enisFromPods(pods)
	if err != nil {
		return ec2types.InstanceTypeInfo{}, err
	}
	arch := ec2types.ArchitectureTypeX8664
	if labels[catalogLabelArch] == "arm64" {
		arch = ec2types.ArchitectureTypeArm64
	}
	info := ec2types.InstanceTypeInfo{
		InstanceType:                 ec2types.InstanceType(it.Name),
		CurrentGeneration:            ptr(true),
		BareMetal:                    ptr(strings.Contains(labels[catalogLabelSize], "metal")),
		Hypervisor:                   ec2types.InstanceTypeHypervisor(labels[catalogLabelHypervisor]),
		SupportedUsageClasses:        []ec2types.UsageClassType{ec2types.UsageClassTypeOnDemand, ec2types.UsageClassTypeSpot},
		SupportedVirtualizationTypes: []ec2types.VirtualizationType{ec2types.VirtualizationTypeHvm},
		SupportedRootDeviceTypes:     []ec2types.RootDeviceType{ec2types.RootDeviceTypeEbs},
		NitroEnclavesSupport:         ec2types.NitroEnclavesSupportUnsupported,
		VCpuInfo:                     &ec2types.VCpuInfo{DefaultVCpus: ptr(vcpus)},
		MemoryInfo:                   &ec2types.MemoryInfo{SizeInMiB: ptr(memory)},
		ProcessorInfo: &ec2types.ProcessorInfo{
			SupportedArchitectures: []ec2types.ArchitectureType{arch},
			Manufacturer:           ptr(manufacturerName(labels[catalogLabelCPUManufacturer])),
		},
		EbsInfo:            ebsInfo(labels),
		NetworkInfo:        networkInfo(labels, it.Allocatable, enis, ipv4),
		PlacementGroupInfo: placementGroupInfo(it.Name),
	}
	if mhz, err := strconv.ParseFloat(labels[catalogLabelClockMHz], 64); err == nil {
		info.ProcessorInfo.SustainedClockSpeedInGhz = ptr(mhz / 1000)
	}
	if gb, err := strconv.ParseInt(labels[catalogLabelLocalNVMe], 10, 64); err == nil {
		info.InstanceStorageSupported = ptr(true)
		info.InstanceStorageInfo = &ec2types.InstanceStorageInfo{TotalSizeInGB: ptr(gb), NvmeSupport: ec2types.EphemeralNvmeSupportRequired}
	}
	if info.GpuInfo, err = gpuInfo(labels); err != nil {
		return ec2types.InstanceTypeInfo{}, err
	}
	if info.NeuronInfo, err = neuronInfo(labels, it.Allocatable); err != nil {
		return ec2types.InstanceTypeInfo{}, err
	}
	return info, nil
}

// enisFromPods splits pods − 2 into ENIs × (IPv4 per ENI − 1), as
// documented on CatalogInstanceTypes.
func enisFromPods(pods int64) (enis, ipv4 int32, err error) {
	n := int32(pods) - 2
	for _, ips := range eniIPv4Choices {
		if n > 0 && n%(ips-1) == 0 && n/(ips-1) >= 2 && n/(ips-1) <= 24 {
			return n / (ips - 1), ips, nil
		}
	}
	return 0, 0, fmt.Errorf("no ENI limits give %d pods", pods)
}

func networkInfo(labels map[string]string, allocatable corev1.ResourceList, enis, ipv4 int32) *ec2types.NetworkInfo {
	efa := allocatable["vpc.amazonaws.com/efa"]
	cards := max(int32(efa.Value()), 1)
	ni := &ec2types.NetworkInfo{
		DefaultNetworkCardIndex:      ptr(int32(0)),
		MaximumNetworkCards:          ptr(cards),
		MaximumNetworkInterfaces:     ptr(cards * enis),
		Ipv4AddressesPerInterface:    ptr(ipv4),
		Ipv6AddressesPerInterface:    ptr(ipv4),
		Ipv6Supported:                ptr(true),
		EncryptionInTransitSupported: ptr(labels[catalogLabelEncryption] == "true"),
		EnaSupport:                   ec2types.EnaSupportRequired,
		EfaSupported:                 ptr(efa.Value() > 0),
	}
	if labels[catalogLabelHypervisor] == "xen" {
		ni.EnaSupport = ec2types.EnaSupportSupported
	}
	for i := range cards {
		ni.NetworkCards = append(ni.NetworkCards, ec2types.NetworkCardInfo{NetworkCardIndex: ptr(i), MaximumNetworkInterfaces: ptr(enis)})
	}
	if efa.Value() > 0 {
		ni.EfaInfo = &ec2types.EfaInfo{MaximumEfaInterfaces: ptr(int32(efa.Value()))}
	}
	return ni
}

func ebsInfo(labels map[string]string) *ec2types.EbsInfo {
	mbps, err := atoi32(labels[catalogLabelEBSBandwidth])
	if err != nil {
		return &ec2types.EbsInfo{EbsOptimizedSupport: ec2types.EbsOptimizedSupportSupported}
	}
	return &ec2types.EbsInfo{
		EbsOptimizedSupport: ec2types.EbsOptimizedSupportDefault,
		EbsOptimizedInfo:    &ec2types.EbsOptimizedInfo{MaximumBandwidthInMbps: ptr(mbps)},
	}
}

func gpuInfo(labels map[string]string) (*ec2types.GpuInfo, error) {
	name, ok := labels[catalogLabelGPUName]
	if !ok {
		return nil, nil
	}
	count, err := atoi32(labels[catalogLabelGPUCount])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", catalogLabelGPUCount, err)
	}
	memory, err := atoi32(labels[catalogLabelGPUMemory])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", catalogLabelGPUMemory, err)
	}
	return &ec2types.GpuInfo{
		Gpus: []ec2types.GpuDeviceInfo{{
			Name:         ptr(deviceName(name)),
			Manufacturer: ptr(manufacturerName(labels[catalogLabelGPUManufacturer])),
			Count:        ptr(count),
			MemoryInfo:   &ec2types.GpuDeviceMemoryInfo{SizeInMiB: ptr(memory)},
		}},
		TotalGpuMemoryInMiB: ptr(count * memory),
	}, nil
}

func neuronInfo(labels map[string]string, allocatable corev1.ResourceList) (*ec2types.NeuronInfo, error) {
	name, ok := labels[catalogLabelAccelName]
	if !ok {
		return nil, nil
	}
	count, err := atoi32(labels[catalogLabelAccelCount])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", catalogLabelAccelCount, err)
	}
	device := ec2types.NeuronDeviceInfo{Name: ptr(deviceName(name)), Count: ptr(count)}
	if cores, ok := allocatable["aws.amazon.com/neuroncore"]; ok && count > 0 {
		device.CoreInfo = &ec2types.NeuronDeviceCoreInfo{Count: ptr(int32(cores.Value()) / count)}
	}
	return &ec2types.NeuronInfo{NeuronDevices: []ec2types.NeuronDeviceInfo{device}}, nil
}

// manufacturerName spells a lower-case catalog manufacturer as EC2 does.
func manufacturerName(label string) string {
	switch label {
	case "aws":
		return "AWS"
	case "amd":
		return "AMD"
	case "nvidia":
		return "NVIDIA"
	case "intel":
		return "Intel"
	}
	return deviceName(label)
}

// deviceName turns a lower-kebab catalog name into a display name that
// lower-kebabs back to it: short model numbers upper-case (a10g → A10G),
// longer words title-case (radeon-pro-v520 → Radeon Pro V520).
func deviceName(label string) string {
	words := strings.Split(label, "-")
	for i, w := range words {
		if len(w) <= 4 {
			words[i] = strings.ToUpper(w)
		} else {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, " ")
}

func atoi32(s string) (int32, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	return int32(n), err
}

// SeedCatalogSpotPrices records, in effect from at, the spot price karp's
// catalog model derives for every priced type of the catalog in each zone
// (catalog.SpotPrice with the catalog's default discounts), so the AWS
// provider prices spot exactly as `karp simulate` does on the same catalog.
func (e *EC2) SeedCatalogSpotPrices(data []byte, zones []OfferingZone, at time.Time) error {
	prices, err := CatalogOnDemandPrices(data)
	if err != nil {
		return err
	}
	opts := catalog.DefaultOptions()
	var records []ec2types.SpotPrice
	for name, onDemand := range prices {
		for _, zone := range zones {
			price := catalog.SpotPrice(name, zone.Name, onDemand, opts)
			records = append(records, ec2types.SpotPrice{
				AvailabilityZone:   ptr(zone.Name),
				AvailabilityZoneId: ptr(zone.ID),
				InstanceType:       ec2types.InstanceType(name),
				ProductDescription: ec2types.RIProductDescriptionLinuxUnix,
				SpotPrice:          ptr(strconv.FormatFloat(price, 'f', -1, 64)),
				Timestamp:          ptr(at),
			})
		}
	}
	e.AddSpotPrices(records...)
	return nil
}

// placementGroupInfo is the placement strategies EC2 lists for a type:
// every type takes partition and spread groups; cluster groups take no
// burstable (t2, t3, t4g...), Mac or flex types.
func placementGroupInfo(name string) *ec2types.PlacementGroupInfo {
	strategies := []ec2types.PlacementGroupStrategy{ec2types.PlacementGroupStrategyPartition, ec2types.PlacementGroupStrategySpread}
	family, _, _ := strings.Cut(name, ".")
	burstable := len(family) > 1 && family[0] == 't' && family[1] >= '0' && family[1] <= '9'
	if !burstable && !strings.HasPrefix(family, "mac") && !strings.Contains(family, "-flex") {
		strategies = append([]ec2types.PlacementGroupStrategy{ec2types.PlacementGroupStrategyCluster}, strategies...)
	}
	return &ec2types.PlacementGroupInfo{SupportedStrategies: strategies}
}
