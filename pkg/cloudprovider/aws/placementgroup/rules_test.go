package placementgroup_test

import (
	"testing"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/placementgroup"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

var (
	cluster   = &awsv1.PlacementGroup{ID: "pg-1", Name: "c", Strategy: awsv1.PlacementGroupStrategyCluster}
	partition = &awsv1.PlacementGroup{ID: "pg-2", Name: "p", Strategy: awsv1.PlacementGroupStrategyPartition, PartitionCount: 3}
	spread    = &awsv1.PlacementGroup{ID: "pg-3", Name: "s", Strategy: awsv1.PlacementGroupStrategySpread}
)

func partitionReq(op corev1.NodeSelectorOperator, values ...string) scheduling.Requirements {
	return scheduling.NewRequirements(scheduling.NewRequirement(awsv1.LabelPlacementGroupPartition, op, values...))
}

func TestPartition(t *testing.T) {
	for name, tc := range map[string]struct {
		group *awsv1.PlacementGroup
		reqs  scheduling.Requirements
		want  int32
	}{
		"no group":                              {reqs: partitionReq(corev1.NodeSelectorOpIn, "2")},
		"nothing pinned: EC2 chooses":           {group: partition, reqs: scheduling.Requirements{}},
		"one partition pinned":                  {group: partition, reqs: partitionReq(corev1.NodeSelectorOpIn, "2"), want: 2},
		"the lowest of several, numerically":    {group: partition, reqs: partitionReq(corev1.NodeSelectorOpIn, "10", "3", "7"), want: 3},
		"a complement pins nothing":             {group: partition, reqs: partitionReq(corev1.NodeSelectorOpNotIn, "1")},
		"not a partition group":                 {group: cluster, reqs: partitionReq(corev1.NodeSelectorOpIn, "2")},
		"values that are not partitions":        {group: partition, reqs: partitionReq(corev1.NodeSelectorOpIn, "x", "0")},
		"values that are not partitions, and 2": {group: partition, reqs: partitionReq(corev1.NodeSelectorOpIn, "x", "2"), want: 2},
	} {
		t.Run(name, func(t *testing.T) {
			if got := placementgroup.Partition(tc.group, tc.reqs); got != tc.want {
				t.Errorf("Partition = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestRequirements(t *testing.T) {
	for name, tc := range map[string]struct {
		group *awsv1.PlacementGroup
		want  map[string][]string
	}{
		"no group adds none":                  {want: map[string][]string{}},
		"a cluster group adds its id":         {group: cluster, want: map[string][]string{awsv1.LabelPlacementGroupID: {"pg-1"}}},
		"a spread group adds its id":          {group: spread, want: map[string][]string{awsv1.LabelPlacementGroupID: {"pg-3"}}},
		"a partition group adds 1..N as well": {group: partition, want: map[string][]string{awsv1.LabelPlacementGroupID: {"pg-2"}, awsv1.LabelPlacementGroupPartition: {"1", "2", "3"}}},
	} {
		t.Run(name, func(t *testing.T) {
			got := map[string][]string{}
			for _, r := range placementgroup.Requirements(tc.group) {
				if r.Operator() != corev1.NodeSelectorOpIn {
					t.Errorf("%s: operator %s, want In", r.Key, r.Operator())
				}
				got[r.Key] = r.Values()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Requirements (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestCompatible(t *testing.T) {
	info := func(strategies ...ec2types.PlacementGroupStrategy) *ec2types.InstanceTypeInfo {
		return &ec2types.InstanceTypeInfo{PlacementGroupInfo: &ec2types.PlacementGroupInfo{SupportedStrategies: strategies}}
	}
	burstable := info(ec2types.PlacementGroupStrategyPartition, ec2types.PlacementGroupStrategySpread)
	for name, tc := range map[string]struct {
		group *awsv1.PlacementGroup
		info  *ec2types.InstanceTypeInfo
		want  bool
	}{
		"no group takes any type":                    {info: &ec2types.InstanceTypeInfo{}, want: true},
		"a cluster group takes a type supporting it": {group: cluster, info: info(ec2types.PlacementGroupStrategyCluster), want: true},
		"a cluster group refuses burstable types":    {group: cluster, info: burstable},
		"a partition group takes them":               {group: partition, info: burstable, want: true},
		"a spread group takes them":                  {group: spread, info: burstable, want: true},
		"a type without placement info is refused":   {group: spread, info: &ec2types.InstanceTypeInfo{}},
	} {
		t.Run(name, func(t *testing.T) {
			if got := placementgroup.Compatible(tc.group, tc.info); got != tc.want {
				t.Errorf("Compatible = %v, want %v", got, tc.want)
			}
		})
	}
}
