package instancetype

import (
	"math"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

const (
	// armCMAMiB is the memory Graviton kernels reserve for the contiguous
	// memory allocator.
	armCMAMiB = 64
	// defaultMaxPods is the kubelet's max pods when the family does not
	// size pods by network interfaces.
	defaultMaxPods = 110
	// defaultEphemeralStorage is the ephemeral storage assumed when no
	// volume says otherwise.
	defaultEphemeralStorage = "20Gi"
)

// familyTraits are how an AMI family sizes its nodes.
type familyTraits struct {
	// eniLimitedPods: max pods follow the network interfaces.
	eniLimitedPods bool
	// podsPerCore is honoured.
	podsPerCore bool
	// kubeReservedUsesENIPods: kube-reserved memory is computed from the
	// ENI-limited pods (without reserved ENIs), not from the max pods.
	kubeReservedUsesENIPods bool
	// ephemeralDevice is the volume holding the kubelet's state ("" for
	// Custom, whose last volume is taken); defaultEphemeral its default size.
	ephemeralDevice  string
	defaultEphemeral string
}

func traitsOf(family string) familyTraits {
	switch family {
	case awsv1.AMIFamilyBottlerocket:
		return familyTraits{eniLimitedPods: true, ephemeralDevice: "/dev/xvdb", defaultEphemeral: "20Gi"}
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		return familyTraits{podsPerCore: true, ephemeralDevice: "/dev/sda1", defaultEphemeral: "50Gi"}
	case awsv1.AMIFamilyCustom:
		return familyTraits{eniLimitedPods: true, podsPerCore: true, kubeReservedUsesENIPods: true}
	default: // AL2, AL2023
		return familyTraits{eniLimitedPods: true, podsPerCore: true, kubeReservedUsesENIPods: true, ephemeralDevice: "/dev/xvda", defaultEphemeral: "20Gi"}
	}
}

// sizing are the inputs of capacity and overhead that come from the
// provider's settings and the EC2NodeClass.
type sizing struct {
	traits                  familyTraits
	windows                 bool
	vmMemoryOverheadPercent float64
	reservedENIs            int64
	kubelet                 *awsv1.KubeletConfiguration
	blockDevices            []*awsv1.BlockDeviceMapping
	instanceStorePolicy     *awsv1.InstanceStorePolicy
	networkInterfaces       []*awsv1.NetworkInterface
}

// capacity is the node's capacity: vCPUs, memory less the VM overhead,
// ephemeral storage, pods and the extended resources of the type.
func (s sizing) capacity(info *ec2types.InstanceTypeInfo, static *staticTables) corev1.ResourceList {
	rl := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(deref(info.VCpuInfo.DefaultVCpus)), resource.DecimalSI),
		corev1.ResourceMemory:           s.memory(info),
		corev1.ResourceEphemeralStorage: s.ephemeralStorage(info),
		corev1.ResourcePods:             *resource.NewQuantity(s.pods(info), resource.DecimalSI),
	}
	add := func(name string, n int64) {
		if n > 0 {
			rl[corev1.ResourceName(name)] = *resource.NewQuantity(n, resource.DecimalSI)
		}
	}
	add(awsv1.ResourceAWSPodENI, static.podENIs[string(info.InstanceType)])
	if info.GpuInfo != nil {
		for _, gpu := range info.GpuInfo.Gpus {
			switch deref(gpu.Manufacturer) {
			case "NVIDIA":
				add(awsv1.ResourceNVIDIAGPU, int64(deref(gpu.Count)))
			case "AMD":
				add(awsv1.ResourceAMDGPU, int64(deref(gpu.Count)))
			case "Habana":
				add(awsv1.ResourceHabanaGaudi, int64(deref(gpu.Count)))
			}
		}
	}
	if info.NeuronInfo != nil && len(info.NeuronInfo.NeuronDevices) > 0 {
		var devices int64
		for _, d := range info.NeuronInfo.NeuronDevices {
			devices += int64(deref(d.Count))
		}
		add(awsv1.ResourceAWSNeuron, devices)
		first := info.NeuronInfo.NeuronDevices[0]
		if first.CoreInfo != nil {
			add(awsv1.ResourceAWSNeuronCore, int64(deref(first.Count))*int64(deref(first.CoreInfo.Count)))
		}
	}
	add(awsv1.ResourceEFA, s.efa(info))
	if s.windows && info.NetworkInfo != nil {
		add(awsv1.ResourcePrivateIPv4Address, int64(deref(info.NetworkInfo.Ipv4AddressesPerInterface))-1)
	}
	return rl
}

// memory is the type's memory less Graviton's CMA and the VM overhead.
func (s sizing) memory(info *ec2types.InstanceTypeInfo) resource.Quantity {
	mib := deref(info.MemoryInfo.SizeInMiB)
	if architecture(info) == "arm64" {
		mib -= armCMAMiB
	}
	mib -= int64(math.Ceil(float64(mib) * s.vmMemoryOverheadPercent))
	return *resource.NewQuantity(mib*1024*1024, resource.BinarySI)
}

// ephemeralStorage is, in order: the instance store when RAID0 is asked
// for, the root volume, the family's ephemeral volume among the class's
// volumes (Custom: the last one), the family default, 20Gi.
func (s sizing) ephemeralStorage(info *ec2types.InstanceTypeInfo) resource.Quantity {
	if s.instanceStorePolicy != nil && *s.instanceStorePolicy == awsv1.InstanceStorePolicyRAID0 &&
		info.InstanceStorageInfo != nil && deref(info.InstanceStorageInfo.TotalSizeInGB) > 0 {
		return *resource.NewScaledQuantity(deref(info.InstanceStorageInfo.TotalSizeInGB), resource.Giga)
	}
	if len(s.blockDevices) > 0 {
		for _, bdm := range s.blockDevices {
			if bdm.RootVolume && bdm.EBS != nil && bdm.EBS.VolumeSize != nil {
				return *bdm.EBS.VolumeSize
			}
		}
		if s.traits.ephemeralDevice == "" {
			if last := s.blockDevices[len(s.blockDevices)-1]; last.EBS != nil && last.EBS.VolumeSize != nil {
				return *last.EBS.VolumeSize
			}
		}
		for _, bdm := range s.blockDevices {
			if deref(bdm.DeviceName) == s.traits.ephemeralDevice && bdm.EBS != nil && bdm.EBS.VolumeSize != nil {
				return *bdm.EBS.VolumeSize
			}
		}
	}
	if s.traits.defaultEphemeral != "" {
		return resource.MustParse(s.traits.defaultEphemeral)
	}
	return resource.MustParse(defaultEphemeralStorage)
}

// eniLimitedPods is ENIs × (IPv4 per ENI − 1) + 2 over the default network
// card's interfaces less the reserved ones and the EFA-only ones the class
// puts on card 0; no usable interface means no pods.
func eniLimitedPods(info *ec2types.InstanceTypeInfo, reservedENIs int64, networkInterfaces []*awsv1.NetworkInterface) int64 {
	ni := info.NetworkInfo
	if ni == nil {
		return 0
	}
	enis := int64(deref(ni.MaximumNetworkInterfaces))
	defaultCard := deref(ni.DefaultNetworkCardIndex)
	for _, card := range ni.NetworkCards {
		if deref(card.NetworkCardIndex) == defaultCard {
			enis = int64(deref(card.MaximumNetworkInterfaces))
		}
	}
	for _, nif := range networkInterfaces {
		if nif.NetworkCardIndex == 0 && nif.InterfaceType == awsv1.InterfaceTypeEFAOnly {
			enis--
		}
	}
	usable := max(0, enis-reservedENIs)
	if usable == 0 {
		return 0
	}
	return usable*(int64(deref(ni.Ipv4AddressesPerInterface))-1) + 2
}

// pods is the kubelet's max pods: the class's maxPods, else the
// ENI-limited count for families sized by ENIs, else 110; capped by
// podsPerCore × vCPUs where the family honours it.
func (s sizing) pods(info *ec2types.InstanceTypeInfo) int64 {
	var pods int64
	switch {
	case s.kubelet != nil && s.kubelet.MaxPods != nil:
		pods = int64(*s.kubelet.MaxPods)
	case s.traits.eniLimitedPods:
		pods = eniLimitedPods(info, s.reservedENIs, s.networkInterfaces)
	default:
		pods = defaultMaxPods
	}
	if s.traits.podsPerCore && s.kubelet != nil && s.kubelet.PodsPerCore != nil && *s.kubelet.PodsPerCore > 0 {
		pods = min(pods, int64(*s.kubelet.PodsPerCore)*int64(deref(info.VCpuInfo.DefaultVCpus)))
	}
	return pods
}

// efa is the class's EFA-only interface count when it lays interfaces out,
// else the type's maximum.
func (s sizing) efa(info *ec2types.InstanceTypeInfo) int64 {
	if len(s.networkInterfaces) > 0 {
		var n int64
		for _, nif := range s.networkInterfaces {
			if nif.InterfaceType == awsv1.InterfaceTypeEFAOnly {
				n++
			}
		}
		return n
	}
	if info.NetworkInfo != nil && info.NetworkInfo.EfaInfo != nil {
		return int64(deref(info.NetworkInfo.EfaInfo.MaximumEfaInterfaces))
	}
	return 0
}
