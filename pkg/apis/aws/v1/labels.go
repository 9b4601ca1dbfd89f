package v1

import (
	"regexp"

	"k8s.io/apimachinery/pkg/util/sets"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// Kind is the kind NodePools name in nodeClassRef.kind.
const Kind = "EC2NodeClass"

// NodeClassReference returns a nodeClassRef pointing at the named EC2NodeClass.
func NodeClassReference(name string) *karpv1.NodeClassReference {
	return &karpv1.NodeClassReference{Group: Group, Kind: Kind, Name: name}
}

// Instance-type labels the AWS provider puts on instance types, NodeClaims
// and Nodes (upstream's well-known karpenter.k8s.aws labels).
const (
	LabelInstanceHypervisor                   = Group + "/instance-hypervisor"
	LabelInstanceEncryptionInTransitSupported = Group + "/instance-encryption-in-transit-supported"
	LabelInstanceCategory                     = Group + "/instance-category"
	LabelInstanceFamily                       = Group + "/instance-family"
	LabelInstanceGeneration                   = Group + "/instance-generation"
	LabelInstanceLocalNVME                    = Group + "/instance-local-nvme"
	LabelInstanceSize                         = Group + "/instance-size"
	LabelInstanceCPU                          = Group + "/instance-cpu"
	LabelInstanceCPUManufacturer              = Group + "/instance-cpu-manufacturer"
	LabelInstanceCPUSustainedClockSpeedMhz    = Group + "/instance-cpu-sustained-clock-speed-mhz"
	LabelInstanceMemory                       = Group + "/instance-memory"
	LabelInstanceEBSBandwidth                 = Group + "/instance-ebs-bandwidth"
	LabelInstanceNetworkBandwidth             = Group + "/instance-network-bandwidth"
	LabelInstanceGPUName                      = Group + "/instance-gpu-name"
	LabelInstanceGPUManufacturer              = Group + "/instance-gpu-manufacturer"
	LabelInstanceGPUCount                     = Group + "/instance-gpu-count"
	LabelInstanceGPUMemory                    = Group + "/instance-gpu-memory"
	LabelInstanceAcceleratorName              = Group + "/instance-accelerator-name"
	LabelInstanceAcceleratorManufacturer      = Group + "/instance-accelerator-manufacturer"
	LabelInstanceAcceleratorCount             = Group + "/instance-accelerator-count"
	LabelInstanceCapabilityFlex               = Group + "/instance-capability-flex"
	LabelInstanceTenancy                      = Group + "/instance-tenancy"
	LabelNitroSandbox                         = Group + "/nitro-sandbox"
	LabelCapacityReservationID                = Group + "/capacity-reservation-id"
	LabelCapacityReservationType              = Group + "/capacity-reservation-type"
	LabelCapacityReservationInterruptible     = Group + "/capacity-reservation-interruptible"
	// LabelPlacementGroupID is the ID of the placement group an instance
	// launched into: a requirement of every instance type of a class with a
	// resolved placement group, and a label of its NodeClaims and Nodes.
	LabelPlacementGroupID = Group + "/placement-group-id"
	// LabelPlacementGroupPartition is the partition (1..N) of a partition
	// placement group an instance runs in; each partition is one offering.
	LabelPlacementGroupPartition = Group + "/placement-group-partition"

	// LabelNodeClass names the EC2NodeClass on NodeClaims and Nodes, and is
	// a tag on every EC2 resource launched for it.
	LabelNodeClass = Group + "/ec2nodeclass"

	// LabelTopologyZoneID is the zone ID (e.g. use1-az1) of a node's zone.
	LabelTopologyZoneID = "topology.k8s.aws/zone-id"
	// LabelWindowsBuild is the Windows build of Windows nodes.
	LabelWindowsBuild = "node.kubernetes.io/windows-build"
)

// Annotations the AWS provider reads or writes.
const (
	// AnnotationEC2NodeClassHash holds EC2NodeClass.Hash() on the
	// EC2NodeClass and, copied at launch, on each of its NodeClaims; a
	// difference between the two is static drift.
	AnnotationEC2NodeClassHash = Group + "/ec2nodeclass-hash"
	// AnnotationEC2NodeClassHashVersion holds EC2NodeClassHashVersion next
	// to the hash; hashes are compared only when the versions are equal.
	AnnotationEC2NodeClassHashVersion = Group + "/ec2nodeclass-hash-version"
	// AnnotationInstanceProfile names the instance profile a NodeClaim's
	// instance was launched with.
	AnnotationInstanceProfile = Group + "/instance-profile-name"
	// AnnotationInstanceTagged is "true" once a NodeClaim's instance carries
	// its Name and karpenter.sh/nodeclaim tags.
	AnnotationInstanceTagged = Group + "/tagged"
	// AnnotationClusterNameTaggedCompatibility is "true" once the instance
	// carries the eks:eks-cluster-name tag.
	AnnotationClusterNameTaggedCompatibility = "compatibility." + Group + "/cluster-name-tagged"
)

// TerminationFinalizer holds an EC2NodeClass until its NodeClaims are gone
// and its instance profiles and launch templates are cleaned up.
const TerminationFinalizer = Group + "/termination"

// Tags karp puts on the EC2 resources it creates.
const (
	// TagEKSClusterName carries the cluster name.
	TagEKSClusterName = "eks:eks-cluster-name"
	// TagNodePool carries the NodeClaim's NodePool.
	TagNodePool = karpv1.NodePoolLabelKey
	// TagNodeClaim carries the NodeClaim's name.
	TagNodeClaim = "karpenter.sh/nodeclaim"
	// TagNodeClass carries the EC2NodeClass's name.
	TagNodeClass = LabelNodeClass
	// TagName is the EC2 console's instance name, set to the node name.
	TagName = "Name"
)

// ClusterTagKey returns the kubernetes.io/cluster/<name> tag key; its value
// is "owned" on everything karp launches.
func ClusterTagKey(clusterName string) string { return "kubernetes.io/cluster/" + clusterName }

// RestrictedTagPatterns are the tag keys spec.tags may not set: karp owns
// them and uses them to find its resources.
var RestrictedTagPatterns = []*regexp.Regexp{
	regexp.MustCompile(`^kubernetes\.io/cluster/[0-9A-Za-z][A-Za-z0-9\-_]*$`),
	regexp.MustCompile(`^` + regexp.QuoteMeta(TagNodePool) + `$`),
	regexp.MustCompile(`^` + regexp.QuoteMeta(TagEKSClusterName) + `$`),
	regexp.MustCompile(`^` + regexp.QuoteMeta(TagNodeClass) + `$`),
	regexp.MustCompile(`^` + regexp.QuoteMeta(TagNodeClaim) + `$`),
}

// WellKnownLabels are the AWS labels every instance type defines (or marks
// DoesNotExist); pass them to karpv1.IsRestrictedLabel together with the
// core set.
var WellKnownLabels = sets.New(
	LabelNodeClass,
	LabelInstanceHypervisor,
	LabelInstanceEncryptionInTransitSupported,
	LabelInstanceCategory,
	LabelInstanceFamily,
	LabelInstanceGeneration,
	LabelInstanceLocalNVME,
	LabelInstanceSize,
	LabelInstanceCPU,
	LabelInstanceCPUManufacturer,
	LabelInstanceCPUSustainedClockSpeedMhz,
	LabelInstanceMemory,
	LabelInstanceEBSBandwidth,
	LabelInstanceNetworkBandwidth,
	LabelInstanceGPUName,
	LabelInstanceGPUManufacturer,
	LabelInstanceGPUCount,
	LabelInstanceGPUMemory,
	LabelInstanceAcceleratorName,
	LabelInstanceAcceleratorManufacturer,
	LabelInstanceAcceleratorCount,
	LabelInstanceCapabilityFlex,
	LabelInstanceTenancy,
	LabelNitroSandbox,
	LabelCapacityReservationID,
	LabelCapacityReservationType,
	LabelCapacityReservationInterruptible,
	LabelPlacementGroupID,
	LabelPlacementGroupPartition,
	LabelTopologyZoneID,
	LabelWindowsBuild,
)

// RestrictedLabelDomain is the label domain only the AWS provider may set.
const RestrictedLabelDomain = Group

// Well-known resources AWS instance types may advertise.
const (
	ResourceNVIDIAGPU           = "nvidia.com/gpu"
	ResourceAMDGPU              = "amd.com/gpu"
	ResourceAWSNeuron           = "aws.amazon.com/neuron"
	ResourceAWSNeuronCore       = "aws.amazon.com/neuroncore"
	ResourceHabanaGaudi         = "habana.ai/gaudi"
	ResourceAWSPodENI           = "vpc.amazonaws.com/pod-eni"
	ResourceEFA                 = "vpc.amazonaws.com/efa"
	ResourcePrivateIPv4Address  = "vpc.amazonaws.com/PrivateIPv4Address"
	ResourceNitroSandboxEnclave = "eks.amazonaws.com/nitro-sandbox"
)

// Capacity reservation types in status and labels.
const (
	CapacityReservationTypeDefault       = "default"
	CapacityReservationTypeCapacityBlock = "capacity-block"
)
