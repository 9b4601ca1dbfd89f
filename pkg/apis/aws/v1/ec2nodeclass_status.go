package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// Condition types of an EC2NodeClass. Ready is the root: True when every
// other one is True, False when any is False.
const (
	ConditionTypeReady = karpv1.ConditionTypeReady
	// ConditionTypeSubnetsReady is True when the subnet selectors matched
	// at least one subnet.
	ConditionTypeSubnetsReady = "SubnetsReady"
	// ConditionTypeSecurityGroupsReady is True when the security group
	// selectors matched at least one group.
	ConditionTypeSecurityGroupsReady = "SecurityGroupsReady"
	// ConditionTypeAMIsReady is True when the AMI selectors resolved at
	// least one AMI.
	ConditionTypeAMIsReady = "AMIsReady"
	// ConditionTypeInstanceProfileReady is True when status.instanceProfile
	// names the profile instances launch with.
	ConditionTypeInstanceProfileReady = "InstanceProfileReady"
	// ConditionTypeCapacityReservationsReady is True after the capacity
	// reservation selectors were listed, even with no match.
	ConditionTypeCapacityReservationsReady = "CapacityReservationsReady"
	// ConditionTypeValidationSucceeded is True when the class passed the
	// checks the API server cannot make (kubelet settings for the family,
	// tags, launch permissions).
	ConditionTypeValidationSucceeded = "ValidationSucceeded"
)

// Reasons of the not-ready conditions (upstream's names).
const (
	ConditionReasonSubnetsNotFound        = "SubnetsNotFound"
	ConditionReasonSecurityGroupsNotFound = "SecurityGroupsNotFound"
	ConditionReasonAMINotFound            = "AMINotFound"
	ConditionReasonUnsupportedAlias       = "UnsupportedAlias"
	ConditionReasonDependenciesNotReady   = "DependenciesNotReady"
	ConditionReasonTagValidationFailed    = "TagValidationFailed"
	ConditionReasonInvalidKubeletConfig   = "InvalidKubeletConfiguration"
	ConditionReasonUnsupportedKubelet     = "UnsupportedKubeletConfiguration"
	ConditionReasonClusterCIDRFailed      = "ClusterCIDRResolutionFailed"
	ConditionReasonUserDataSizeExceeded   = "UserDataSizeLimitExceeded"
	ConditionReasonCreateLTAuthFailed     = "CreateLaunchTemplateAuthCheckFailed"
	ConditionReasonCreateFleetAuthFailed  = "CreateFleetAuthCheckFailed"
	ConditionReasonRunInstancesAuthFailed = "RunInstancesAuthCheckFailed"
	ConditionReasonInstanceProfileMissing = "InstanceProfileNotFound"
)

// EC2NodeClassStatus is what the EC2NodeClass resolved to in EC2.
type EC2NodeClassStatus struct {
	// Subnets the subnet selectors matched, most free IPs first.
	// +optional
	Subnets []Subnet `json:"subnets,omitempty"`
	// SecurityGroups the security group selectors matched, by ID.
	// +optional
	SecurityGroups []SecurityGroup `json:"securityGroups,omitempty"`
	// CapacityReservations the capacity reservation selectors matched.
	// +optional
	CapacityReservations []CapacityReservation `json:"capacityReservations,omitempty"`
	// AMIs the AMI selectors resolved, newest first, with the instance-type
	// requirements each serves.
	// +optional
	AMIs []AMI `json:"amis,omitempty"`
	// InstanceProfile instances launch with: the one karp manages for
	// spec.role, or spec.instanceProfile.
	// +optional
	InstanceProfile string `json:"instanceProfile,omitempty"`
	// PlacementGroup placementGroupSelector resolved to (a karp addition).
	// +optional
	PlacementGroup *PlacementGroup `json:"placementGroup,omitempty"`
	// Conditions of the EC2NodeClass; Ready tells NodePools it can be used.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Subnet is a resolved subnet.
type Subnet struct {
	// ID of the subnet.
	// +required
	ID string `json:"id"`
	// Zone is the subnet's availability zone name.
	// +required
	Zone string `json:"zone"`
	// ZoneID is the subnet's availability zone ID.
	// +optional
	ZoneID string `json:"zoneID,omitempty"`
}

// SecurityGroup is a resolved security group.
type SecurityGroup struct {
	// ID of the security group.
	// +required
	ID string `json:"id"`
	// Name of the security group.
	// +optional
	Name string `json:"name,omitempty"`
}

// CapacityReservation is a resolved capacity reservation or capacity block.
type CapacityReservation struct {
	// AvailabilityZone the reservation is in.
	// +required
	AvailabilityZone string `json:"availabilityZone"`
	// EndTime after which the reservation's instances are reclaimed.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty" hash:"ignore"`
	// ID of the capacity reservation.
	// +kubebuilder:validation:Pattern:="^cr-[0-9a-z]+$"
	// +required
	ID string `json:"id"`
	// InstanceMatchCriteria of the reservation.
	// +kubebuilder:validation:Enum:={open,targeted}
	// +required
	InstanceMatchCriteria string `json:"instanceMatchCriteria"`
	// InstanceType the reservation is for.
	// +required
	InstanceType string `json:"instanceType"`
	// OwnerID is the account that owns the reservation.
	// +kubebuilder:validation:Pattern:="^[0-9]{12}$"
	// +required
	OwnerID string `json:"ownerID"`
	// ReservationType is default (an on-demand capacity reservation) or
	// capacity-block.
	// +kubebuilder:validation:Enum:={default,capacity-block}
	// +kubebuilder:default=default
	// +optional
	ReservationType string `json:"reservationType,omitempty"`
	// Interruptible reservations may reclaim their instances.
	// +optional
	Interruptible bool `json:"interruptible,omitempty"`
	// State is active, or expiring when a capacity block is about to end.
	// +kubebuilder:validation:Enum:={active,expiring}
	// +kubebuilder:default=active
	// +optional
	State string `json:"state,omitempty"`
}

// AMI is a resolved AMI and the instance types it serves.
type AMI struct {
	// ID of the AMI.
	// +required
	ID string `json:"id"`
	// Deprecated AMIs are used only while no other serves the requirements.
	// +optional
	Deprecated bool `json:"deprecated,omitempty"`
	// Name of the AMI.
	// +optional
	Name string `json:"name,omitempty"`
	// Requirements an instance type must meet to boot this AMI.
	// +required
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
}

// ZoneInfo is one zone of the class's subnets.
//
// +kubebuilder:object:generate=false
type ZoneInfo struct {
	Zone      string
	ZoneID    string
	SubnetIDs []string
}

// StatusConditions returns the EC2NodeClass's conditions, with Ready
// derived from the others.
func (in *EC2NodeClass) StatusConditions() karpv1.ConditionSet {
	return karpv1.NewConditionSet(&in.Status.Conditions, in.Generation, ConditionTypeReady,
		ConditionTypeAMIsReady,
		ConditionTypeSubnetsReady,
		ConditionTypeSecurityGroupsReady,
		ConditionTypeInstanceProfileReady,
		ConditionTypeCapacityReservationsReady,
		ConditionTypeValidationSucceeded,
		ConditionTypePlacementGroupReady,
	)
}

// ZoneInfo groups status.subnets by zone, in the order zones first appear.
func (in *EC2NodeClass) ZoneInfo() []ZoneInfo {
	var out []ZoneInfo
	index := map[string]int{}
	for _, s := range in.Status.Subnets {
		i, ok := index[s.Zone]
		if !ok {
			i = len(out)
			index[s.Zone] = i
			out = append(out, ZoneInfo{Zone: s.Zone, ZoneID: s.ZoneID})
		}
		out[i].SubnetIDs = append(out[i].SubnetIDs, s.ID)
	}
	return out
}
