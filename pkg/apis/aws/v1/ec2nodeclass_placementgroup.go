package v1

// PlacementGroupSelector selects the one EC2 placement group every instance
// of the class launches into, by name or by ID (exactly one). Upstream's
// v1.14 schema (aws/karpenter-provider-aws 1d927085d,
// pkg/apis/v1/ec2nodeclass.go).
type PlacementGroupSelector struct {
	// Name is the placement group name in EC2
	// +kubebuilder:validation:MinLength:=1
	// +optional
	Name *string `json:"name,omitempty"`
	// ID is the placement group id in EC2
	// +kubebuilder:validation:Pattern:="^pg-[0-9a-z]+$"
	// +optional
	ID *string `json:"id,omitempty"`
}

// PlacementGroupStrategy is how EC2 places a group's instances.
type PlacementGroupStrategy string

const (
	// PlacementGroupStrategyCluster packs instances close together in one
	// zone. EC2 pins the group to the zone of its first instance and
	// refuses other zones' launches for capacity; karp, as upstream, offers
	// every zone and lets those refusals mark offerings unavailable.
	PlacementGroupStrategyCluster PlacementGroupStrategy = "cluster"
	// PlacementGroupStrategyPartition spreads instances over partitions
	// that share no racks. Instance types get one offering per partition,
	// labelled karpenter.k8s.aws/placement-group-partition, so pods can
	// spread over or pin partitions.
	PlacementGroupStrategyPartition PlacementGroupStrategy = "partition"
	// PlacementGroupStrategySpread puts each instance on distinct hardware,
	// at most seven per zone (EC2 refuses more).
	PlacementGroupStrategySpread PlacementGroupStrategy = "spread"
)

// PlacementGroup is the placement group placementGroupSelector resolved to.
//
// Upstream keeps the resolved group in its controller's memory; karp
// records it in the status (a karp addition, not in upstream's schema) so
// the launch, instance-type and drift paths read what the status
// controller resolved and what made the class Ready, as they do for
// subnets and security groups.
type PlacementGroup struct {
	// ID of the placement group.
	// +kubebuilder:validation:Pattern:="^pg-[0-9a-z]+$"
	// +required
	ID string `json:"id"`
	// Name of the placement group.
	// +required
	Name string `json:"name"`
	// Strategy of the placement group.
	// +kubebuilder:validation:Enum:={cluster,partition,spread}
	// +required
	Strategy PlacementGroupStrategy `json:"strategy"`
	// PartitionCount is the number of partitions of a partition group.
	// +optional
	PartitionCount int32 `json:"partitionCount,omitempty"`
	// SpreadLevel is host or rack for a spread group.
	// +optional
	SpreadLevel string `json:"spreadLevel,omitempty"`
}

// ConditionTypePlacementGroupReady is True when the class has no
// placementGroupSelector or the selector resolved to an available group.
const ConditionTypePlacementGroupReady = "PlacementGroupReady"

// Reasons of a False PlacementGroupReady (upstream's).
const (
	// ConditionReasonPlacementGroupNotFound: no available group has the
	// selector's name or ID.
	ConditionReasonPlacementGroupNotFound = "PlacementGroupNotFound"
	// ConditionReasonPlacementGroupResolutionFailed: DescribePlacementGroups
	// failed.
	ConditionReasonPlacementGroupResolutionFailed = "PlacementGroupResolutionFailed"
)
