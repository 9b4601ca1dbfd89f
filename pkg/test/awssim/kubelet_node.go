package awssim

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
)

// The EKS-optimized AMIs' kubelet defaults.
const (
	// vmMemoryOverheadPercent is the share of an instance type's memory the
	// hypervisor and firmware keep: the OS sees the rest.
	vmMemoryOverheadPercent = 0.075
	// armCMAMiB is the contiguous memory Graviton kernels reserve.
	armCMAMiB             = 64
	defaultRootVolume     = "20Gi"
	defaultMaxPods        = 110
	evictionMemory        = "100Mi"
	evictionNodefsPercent = 10
)

// launch is what an instance booted from: its type's EC2 description, its
// launch template's user data and root volume.
type launch struct {
	instance   ec2types.Instance
	info       ec2types.InstanceTypeInfo
	userData   string
	rootVolume *resource.Quantity
	region     string
	k8sVersion string
	// network is the second octet of the simulated VPC's 10.x.0.0/16.
	network byte
	// efa is how many EFA devices the launch template attached.
	efa int64
}

// nodeName is the instance's private DNS name, ip-<address>.<region>.compute.internal.
func (l launch) nodeName() string {
	if name := aws.ToString(l.instance.PrivateDnsName); name != "" {
		return name
	}
	return "ip-" + strings.ReplaceAll(l.privateIP(), ".", "-") + "." + l.region + ".compute.internal"
}

// privateIP is the instance's address, or one derived from its ID (the
// simulated instances have none of their own) in the VPC's 10.<network>.0.0/16.
func (l launch) privateIP() string {
	if ip := aws.ToString(l.instance.PrivateIpAddress); ip != "" {
		return ip
	}
	n, _ := strconv.ParseUint(strings.TrimPrefix(aws.ToString(l.instance.InstanceId), "i-"), 16, 64)
	return fmt.Sprintf("10.%d.%d.%d", l.network, (n>>8)&0xff, n&0xff)
}

// node is the Node a kubelet on the instance registers: named by private
// DNS name, with its providerID, the user data's labels and taints over the
// kubelet's well-known labels, and capacity and allocatable as the AMI's
// kubelet computes them. kwok manages it from there (Ready, heartbeats,
// pods): the Node carries the annotation the kwok provider puts on its
// Nodes and the local cluster's kwok selects, defined with the kwok API.
func (l launch) node(boot bootConfig) *corev1.Node {
	inst := l.instance
	name := l.nodeName()
	zone := aws.ToString(inst.Placement.AvailabilityZone)
	arch := "amd64"
	if inst.Architecture == ec2types.ArchitectureValuesArm64 || l.arm64() {
		arch = "arm64"
	}
	labels := map[string]string{}
	for k, v := range boot.labels {
		labels[k] = v
	}
	for k, v := range map[string]string{
		corev1.LabelHostname:           name,
		corev1.LabelArchStable:         arch,
		corev1.LabelOSStable:           "linux",
		corev1.LabelInstanceTypeStable: string(inst.InstanceType),
		corev1.LabelTopologyZone:       zone,
		corev1.LabelTopologyRegion:     l.region,
	} {
		labels[k] = v
	}
	capacity := l.capacity(boot)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: map[string]string{kwokv1alpha1.KWOKNodeAnnotationKey: kwokv1alpha1.KWOKNodeAnnotationValue},
		},
		Spec: corev1.NodeSpec{
			ProviderID: fmt.Sprintf("aws:///%s/%s", zone, aws.ToString(inst.InstanceId)),
			Taints:     boot.taints,
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: allocatable(capacity, l.info, boot),
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: l.privateIP()},
				{Type: corev1.NodeHostName, Address: name},
				{Type: corev1.NodeInternalDNS, Address: name},
			},
			NodeInfo: corev1.NodeSystemInfo{
				Architecture: arch, OperatingSystem: "linux", KubeletVersion: "v" + l.k8sVersion + ".0",
				OSImage: "Amazon Linux (" + aws.ToString(inst.ImageId) + ")", SystemUUID: aws.ToString(inst.InstanceId),
			},
		},
	}
}

func (l launch) arm64() bool {
	if l.info.ProcessorInfo == nil {
		return false
	}
	for _, a := range l.info.ProcessorInfo.SupportedArchitectures {
		if a == ec2types.ArchitectureTypeArm64 {
			return true
		}
	}
	return false
}

// capacity is what the kubelet reports: the vCPUs, the memory the OS sees,
// the root volume, max pods (the user data's, else the VPC CNI's ENI limit)
// the type's GPUs and Neuron devices, and the EFA devices attached at
// launch (vpc.amazonaws.com/efa, as the EFA device plugin advertises them:
// none on an EFA-capable type launched with a plain interface).
func (l launch) capacity(boot bootConfig) corev1.ResourceList {
	info := l.info
	mib := aws.ToInt64(info.MemoryInfo.SizeInMiB)
	if l.arm64() {
		mib -= armCMAMiB
	}
	mib -= int64(math.Ceil(float64(mib) * vmMemoryOverheadPercent))
	root := resource.MustParse(defaultRootVolume)
	if l.rootVolume != nil {
		root = *l.rootVolume
	}
	rl := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(aws.ToInt32(info.VCpuInfo.DefaultVCpus)), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(mib*1024*1024, resource.BinarySI),
		corev1.ResourceEphemeralStorage: root,
		corev1.ResourcePods:             *resource.NewQuantity(l.maxPods(boot), resource.DecimalSI),
	}
	if info.GpuInfo != nil {
		var nvidia int64
		for _, g := range info.GpuInfo.Gpus {
			if aws.ToString(g.Manufacturer) == "NVIDIA" {
				nvidia += int64(aws.ToInt32(g.Count))
			}
		}
		if nvidia > 0 {
			rl["nvidia.com/gpu"] = *resource.NewQuantity(nvidia, resource.DecimalSI)
		}
	}
	if info.NeuronInfo != nil {
		var devices int64
		for _, d := range info.NeuronInfo.NeuronDevices {
			devices += int64(aws.ToInt32(d.Count))
		}
		if devices > 0 {
			rl["aws.amazon.com/neuron"] = *resource.NewQuantity(devices, resource.DecimalSI)
		}
	}
	if l.efa > 0 {
		rl[awsv1.ResourceEFA] = *resource.NewQuantity(l.efa, resource.DecimalSI)
	}
	return rl
}

func (l launch) maxPods(boot bootConfig) int64 {
	if boot.maxPods != nil {
		return *boot.maxPods
	}
	if pods := eniPods(l.info); pods > 0 {
		return pods
	}
	return defaultMaxPods
}

// eniPods is the VPC CNI's limit: ENIs × (IPv4 per ENI − 1) + 2.
func eniPods(info ec2types.InstanceTypeInfo) int64 {
	ni := info.NetworkInfo
	if ni == nil {
		return 0
	}
	return int64(aws.ToInt32(ni.MaximumNetworkInterfaces))*(int64(aws.ToInt32(ni.Ipv4AddressesPerInterface))-1) + 2
}

// allocatable is capacity less kube-reserved (the EKS AMIs' formulas: CPU
// by tiers of cores, 11Mi per ENI-limited pod + 255Mi, 1Gi of disk; the
// user data's values where set), system-reserved and the hard eviction
// thresholds (100Mi of memory and 10% of nodefs by default).
func allocatable(capacity corev1.ResourceList, info ec2types.InstanceTypeInfo, boot bootConfig) corev1.ResourceList {
	out := capacity.DeepCopy()
	pods := eniPods(info)
	if boot.bottlerocket || pods == 0 {
		pods = capacity.Pods().Value()
	}
	kubeReserved := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(reservedMillicores(capacity.Cpu().MilliValue()), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity((11*pods+255)*1024*1024, resource.BinarySI),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Gi"),
	}
	override(kubeReserved, boot.kubeReserved)
	systemReserved := corev1.ResourceList{}
	override(systemReserved, boot.systemReserved)
	eviction := corev1.ResourceList{
		corev1.ResourceMemory:           resource.MustParse(evictionMemory),
		corev1.ResourceEphemeralStorage: percentOf(capacity[corev1.ResourceEphemeralStorage], evictionNodefsPercent),
	}
	for signal, name := range map[string]corev1.ResourceName{"memory.available": corev1.ResourceMemory, "nodefs.available": corev1.ResourceEphemeralStorage} {
		value, ok := boot.evictionHard[signal]
		if !ok {
			continue
		}
		if pct, isPct := strings.CutSuffix(value, "%"); isPct {
			if p, err := strconv.ParseFloat(pct, 64); err == nil && p < 100 {
				eviction[name] = percentOf(capacity[name], p)
			}
			continue
		}
		if q, err := resource.ParseQuantity(value); err == nil {
			eviction[name] = q
		}
	}
	for _, overhead := range []corev1.ResourceList{kubeReserved, systemReserved, eviction} {
		for name, q := range overhead {
			v, ok := out[name]
			if !ok {
				continue
			}
			v.Sub(q)
			if v.Sign() < 0 {
				v = *resource.NewQuantity(0, v.Format)
			}
			out[name] = v
		}
	}
	return out
}

// reservedMillicores reserves 6% of the first core, 1% of the second, 0.5%
// of the next two and 0.25% of the rest.
func reservedMillicores(cpu int64) int64 {
	var reserved int64
	for _, tier := range []struct {
		millicores int64
		percent    float64
	}{{1000, 6}, {1000, 1}, {2000, 0.5}, {math.MaxInt64, 0.25}} {
		if cpu <= 0 {
			break
		}
		take := min(cpu, tier.millicores)
		reserved += int64(float64(take) * tier.percent / 100)
		cpu -= take
	}
	return reserved
}

func override(rl corev1.ResourceList, values map[string]string) {
	for key, value := range values {
		name := corev1.ResourceName(key)
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != corev1.ResourceEphemeralStorage {
			continue
		}
		if q, err := resource.ParseQuantity(value); err == nil {
			rl[name] = q
		}
	}
}

func percentOf(q resource.Quantity, p float64) resource.Quantity {
	return *resource.NewQuantity(int64(math.Ceil(float64(q.Value())*p/100)), q.Format)
}
