package placementgroup

import (
	"slices"
	"strconv"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// Partitions are a partition group's partition numbers as label values,
// "1" to "N"; none for other strategies.
func Partitions(group *awsv1.PlacementGroup) []string {
	if group == nil || group.Strategy != awsv1.PlacementGroupStrategyPartition || group.PartitionCount <= 0 {
		return nil
	}
	out := make([]string, group.PartitionCount)
	for i := range out {
		out[i] = strconv.Itoa(i + 1)
	}
	return out
}

// Partition is the partition a launch into a partition group targets: the
// lowest one the requirements allow on
// karpenter.k8s.aws/placement-group-partition (EC2 takes one number;
// upstream picks the lowest), or 0 to let EC2 choose, which it does when
// nothing pins a partition or the group is not a partition group.
func Partition(group *awsv1.PlacementGroup, reqs scheduling.Requirements) int32 {
	if group == nil || group.Strategy != awsv1.PlacementGroupStrategyPartition {
		return 0
	}
	req := reqs.Get(awsv1.LabelPlacementGroupPartition)
	if req == nil {
		return 0
	}
	var lowest int32
	for _, v := range req.Values() {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n <= 0 {
			continue
		}
		if lowest == 0 || int32(n) < lowest {
			lowest = int32(n)
		}
	}
	return lowest
}

// Requirements are what a resolved group adds to every instance type of
// its class: the group's ID, and for a partition group its partitions, so
// NodePools and pods can select the group and spread over or pin
// partitions (upstream's injection). A class without a group adds none,
// and its types leave both labels undefined.
func Requirements(group *awsv1.PlacementGroup) []*scheduling.Requirement {
	if group == nil {
		return nil
	}
	out := []*scheduling.Requirement{scheduling.NewRequirement(awsv1.LabelPlacementGroupID, corev1.NodeSelectorOpIn, group.ID)}
	if partitions := Partitions(group); len(partitions) > 0 {
		out = append(out, scheduling.NewRequirement(awsv1.LabelPlacementGroupPartition, corev1.NodeSelectorOpIn, partitions...))
	}
	return out
}

// Compatible reports whether an instance type can launch into the group:
// EC2 lists the strategies each type supports (cluster groups, for one,
// take no burstable or Mac types). Every type is compatible with no group.
// Upstream filters nothing else: a cluster group's single zone is left to
// EC2, which refuses launches in the group's other zones for capacity.
func Compatible(group *awsv1.PlacementGroup, info *ec2types.InstanceTypeInfo) bool {
	if group == nil {
		return true
	}
	if info == nil || info.PlacementGroupInfo == nil {
		return false
	}
	return slices.Contains(info.PlacementGroupInfo.SupportedStrategies, ec2types.PlacementGroupStrategy(group.Strategy))
}
