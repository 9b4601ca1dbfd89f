package instancetype

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

const (
	labelNetworkBandwidth = awsv1.LabelInstanceNetworkBandwidth
	resourcePodENI        = corev1.ResourceName(awsv1.ResourceAWSPodENI)
)

// instanceTypeName splits a type name into category, generation and, in
// between, the optional high-memory size (u-6tb1.metal: u, -6tb, 1).
var instanceTypeName = regexp.MustCompile(`(^[a-z]+)(\-[0-9]+tb)?([0-9]+).*\.`)

// windowsBuilds are the node.kubernetes.io/windows-build values of the
// Windows families.
var windowsBuilds = map[string]string{
	awsv1.AMIFamilyWindows2019: "10.0.17763",
	awsv1.AMIFamilyWindows2022: "10.0.20348",
	awsv1.AMIFamilyWindows2025: "10.0.26100",
}

// requirements describes a node of the type: every karpenter.k8s.aws label
// (DoesNotExist where EC2 has no data), architecture, OS, region, tenancy,
// zone IDs and capacity reservations. The zone and capacity-type keys are
// set from the offerings by scheduling.NewInstanceType.
func requirements(info *ec2types.InstanceTypeInfo, family, region string, zoneIDs []string, reservations []awsv1.CapacityReservation, static *staticTables) scheduling.Requirements {
	name := string(info.InstanceType)
	labels := make(map[string]string, 32)
	labels[corev1.LabelTopologyRegion] = region
	labels[awsv1.LabelInstanceHypervisor] = string(info.Hypervisor)
	labels[awsv1.LabelInstanceEncryptionInTransitSupported] = strconv.FormatBool(info.NetworkInfo != nil && deref(info.NetworkInfo.EncryptionInTransitSupported))
	labels[awsv1.LabelNitroSandbox] = strconv.FormatBool(info.NitroEnclavesSupport == ec2types.NitroEnclavesSupportSupported)
	// Every key is set once, so requirements are assigned, not intersected.
	reqs := make(scheduling.Requirements, 48)
	absent := func(keys ...string) {
		for _, k := range keys {
			reqs[k] = scheduling.NewRequirement(k, corev1.NodeSelectorOpDoesNotExist)
		}
	}

	arch := architecture(info)
	labels[corev1.LabelArchStable] = arch
	if build, windows := windowsBuilds[family]; windows {
		labels[awsv1.LabelWindowsBuild] = build
		if arch == karpv1.ArchitectureAmd64 {
			labels[corev1.LabelOSStable] = string(corev1.Windows)
		} else {
			// No Windows AMI runs on this architecture: no OS fits.
			reqs[corev1.LabelOSStable] = scheduling.NewRequirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn)
		}
	} else {
		labels[corev1.LabelOSStable] = string(corev1.Linux)
		absent(awsv1.LabelWindowsBuild)
	}

	familyName, size, _ := strings.Cut(name, ".")
	labels[awsv1.LabelInstanceFamily] = familyName
	labels[awsv1.LabelInstanceSize] = size
	labels[awsv1.LabelInstanceCapabilityFlex] = strconv.FormatBool(strings.Contains(familyName, "-flex"))
	if m := instanceTypeName.FindStringSubmatch(name); m != nil {
		labels[awsv1.LabelInstanceCategory] = m[1]
		labels[awsv1.LabelInstanceGeneration] = m[3]
	} else {
		absent(awsv1.LabelInstanceCategory, awsv1.LabelInstanceGeneration)
	}

	if info.VCpuInfo != nil && info.VCpuInfo.DefaultVCpus != nil {
		labels[awsv1.LabelInstanceCPU] = fmt.Sprint(*info.VCpuInfo.DefaultVCpus)
	}
	if info.MemoryInfo != nil && info.MemoryInfo.SizeInMiB != nil {
		labels[awsv1.LabelInstanceMemory] = fmt.Sprint(*info.MemoryInfo.SizeInMiB)
	}
	if p := info.ProcessorInfo; p != nil && p.Manufacturer != nil {
		labels[awsv1.LabelInstanceCPUManufacturer] = lowerKebab(*p.Manufacturer)
	} else {
		absent(awsv1.LabelInstanceCPUManufacturer)
	}
	if p := info.ProcessorInfo; p != nil && p.SustainedClockSpeedInGhz != nil {
		labels[awsv1.LabelInstanceCPUSustainedClockSpeedMhz] = fmt.Sprint(int64(math.Round(*p.SustainedClockSpeedInGhz * 1000)))
	} else {
		absent(awsv1.LabelInstanceCPUSustainedClockSpeedMhz)
	}
	if e := info.EbsInfo; e != nil && e.EbsOptimizedSupport == ec2types.EbsOptimizedSupportDefault && e.EbsOptimizedInfo != nil && e.EbsOptimizedInfo.MaximumBandwidthInMbps != nil {
		labels[awsv1.LabelInstanceEBSBandwidth] = fmt.Sprint(*e.EbsOptimizedInfo.MaximumBandwidthInMbps)
	} else {
		absent(awsv1.LabelInstanceEBSBandwidth)
	}
	if bw, ok := static.networkBandwidthMbps[name]; ok {
		labels[awsv1.LabelInstanceNetworkBandwidth] = bw
	} else {
		absent(awsv1.LabelInstanceNetworkBandwidth)
	}
	if s := info.InstanceStorageInfo; s != nil && s.NvmeSupport != ec2types.EphemeralNvmeSupportUnsupported && s.TotalSizeInGB != nil {
		labels[awsv1.LabelInstanceLocalNVME] = fmt.Sprint(*s.TotalSizeInGB)
	} else {
		absent(awsv1.LabelInstanceLocalNVME)
	}
	addGPULabels(info, labels, absent)
	addAcceleratorLabels(info, labels, absent)

	for k, v := range labels {
		reqs[k] = scheduling.NewRequirement(k, corev1.NodeSelectorOpIn, v)
	}
	reqs[awsv1.LabelInstanceTenancy] = scheduling.NewRequirement(awsv1.LabelInstanceTenancy, corev1.NodeSelectorOpIn, string(ec2types.TenancyDefault), string(ec2types.TenancyDedicated))
	if len(zoneIDs) > 0 {
		reqs[awsv1.LabelTopologyZoneID] = scheduling.NewRequirement(awsv1.LabelTopologyZoneID, corev1.NodeSelectorOpIn, zoneIDs...)
	}
	addReservationRequirements(reqs, reservations)
	return reqs
}

func addGPULabels(info *ec2types.InstanceTypeInfo, labels map[string]string, absent func(...string)) {
	if info.GpuInfo == nil || len(info.GpuInfo.Gpus) != 1 {
		absent(awsv1.LabelInstanceGPUName, awsv1.LabelInstanceGPUManufacturer, awsv1.LabelInstanceGPUCount, awsv1.LabelInstanceGPUMemory)
		return
	}
	gpu := info.GpuInfo.Gpus[0]
	labels[awsv1.LabelInstanceGPUName] = lowerKebab(deref(gpu.Name))
	labels[awsv1.LabelInstanceGPUManufacturer] = lowerKebab(deref(gpu.Manufacturer))
	labels[awsv1.LabelInstanceGPUCount] = fmt.Sprint(deref(gpu.Count))
	if gpu.MemoryInfo != nil {
		labels[awsv1.LabelInstanceGPUMemory] = fmt.Sprint(deref(gpu.MemoryInfo.SizeInMiB))
	} else {
		absent(awsv1.LabelInstanceGPUMemory)
	}
}

// addAcceleratorLabels labels one kind of inference accelerator or Neuron
// device (Neuron devices are always made by AWS).
func addAcceleratorLabels(info *ec2types.InstanceTypeInfo, labels map[string]string, absent func(...string)) {
	switch {
	case info.NeuronInfo != nil && len(info.NeuronInfo.NeuronDevices) == 1:
		d := info.NeuronInfo.NeuronDevices[0]
		labels[awsv1.LabelInstanceAcceleratorName] = lowerKebab(deref(d.Name))
		labels[awsv1.LabelInstanceAcceleratorManufacturer] = "aws"
		labels[awsv1.LabelInstanceAcceleratorCount] = fmt.Sprint(deref(d.Count))
	case info.NeuronInfo == nil && info.InferenceAcceleratorInfo != nil && len(info.InferenceAcceleratorInfo.Accelerators) == 1:
		a := info.InferenceAcceleratorInfo.Accelerators[0]
		labels[awsv1.LabelInstanceAcceleratorName] = lowerKebab(deref(a.Name))
		labels[awsv1.LabelInstanceAcceleratorManufacturer] = lowerKebab(deref(a.Manufacturer))
		labels[awsv1.LabelInstanceAcceleratorCount] = fmt.Sprint(deref(a.Count))
	default:
		absent(awsv1.LabelInstanceAcceleratorName, awsv1.LabelInstanceAcceleratorManufacturer, awsv1.LabelInstanceAcceleratorCount)
	}
}

// addReservationRequirements requires the capacity-reservation labels
// absence on a type without reservations. A type with reservations leaves
// them unconstrained: its on-demand and spot nodes carry none of them and
// its reserved nodes carry their reservation's, which the launched
// offering (Offering.ReservationID) decides.
func addReservationRequirements(reqs scheduling.Requirements, reservations []awsv1.CapacityReservation) {
	if len(reservations) > 0 {
		return
	}
	for _, k := range []string{awsv1.LabelCapacityReservationID, awsv1.LabelCapacityReservationType, awsv1.LabelCapacityReservationInterruptible} {
		reqs[k] = scheduling.NewRequirement(k, corev1.NodeSelectorOpDoesNotExist)
	}
}

func architecture(info *ec2types.InstanceTypeInfo) string {
	if info.ProcessorInfo != nil && len(info.ProcessorInfo.SupportedArchitectures) > 0 {
		switch info.ProcessorInfo.SupportedArchitectures[0] {
		case ec2types.ArchitectureTypeArm64:
			return karpv1.ArchitectureArm64
		case ec2types.ArchitectureTypeX8664:
			return karpv1.ArchitectureAmd64
		}
	}
	return ""
}

// lowerKebab spells an EC2 display name as a label value (Radeon Pro V520 →
// radeon-pro-v520).
func lowerKebab(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(s), "-"))
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
