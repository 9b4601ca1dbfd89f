package aws_test

import (
	"strconv"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// launchView is what one Create sent to EC2 and got back: the CreateFleet
// request, the Placement of its launch templates, and the instance as EC2
// describes it.
type launchView struct {
	nodeClaim  *karpv1.NodeClaim
	placements []*ec2types.LaunchTemplatePlacementRequest
	types      map[string]bool
	instance   ec2types.Instance
}

func launchAndInspect(t *testing.T, w *world, nc *karpv1.NodeClaim) launchView {
	t.Helper()
	created, err := w.Provider.Create(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	inputs := w.EC2.CreateFleetInputs()
	out := launchView{nodeClaim: created, types: map[string]bool{}}
	for _, cfg := range inputs[len(inputs)-1].LaunchTemplateConfigs {
		data, ok := w.EC2.LaunchTemplateData(awssdk.ToString(cfg.LaunchTemplateSpecification.LaunchTemplateName))
		if !ok {
			t.Fatalf("launch template %s was not created", awssdk.ToString(cfg.LaunchTemplateSpecification.LaunchTemplateName))
		}
		out.placements = append(out.placements, data.Placement)
		for _, o := range cfg.Overrides {
			out.types[string(o.InstanceType)] = true
		}
	}
	id := created.Status.ProviderID[strings.LastIndex(created.Status.ProviderID, "/")+1:]
	for _, inst := range w.EC2.Instances() {
		if awssdk.ToString(inst.InstanceId) == id {
			out.instance = inst
		}
	}
	if out.instance.InstanceId == nil {
		t.Fatalf("instance %s not in EC2", id)
	}
	return out
}

// A NodeClaim requiring dedicated tenancy launches dedicated instances
// (Placement.Tenancy in every launch template) and its node is labelled
// with the tenancy the instance has; default stays default.
func TestTenancy(t *testing.T) {
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	for name, tc := range map[string]struct {
		values []string
		want   ec2types.Tenancy
	}{
		"no requirement":        {want: ec2types.TenancyDefault},
		"dedicated required":    {values: []string{"dedicated"}, want: ec2types.TenancyDedicated},
		"either: default first": {values: []string{"dedicated", "default"}, want: ec2types.TenancyDefault},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			nc := newNodeClaim("tenancy", nodeClass.Name)
			if tc.values != nil {
				nc = withRequirement(nc, awsv1.LabelInstanceTenancy, tc.values...)
			}
			got := launchAndInspect(t, w, nc)
			for _, p := range got.placements {
				if p == nil || p.Tenancy != tc.want {
					t.Errorf("launch template Placement %+v, want tenancy %s", p, tc.want)
				}
			}
			if got.instance.Placement.Tenancy != tc.want {
				t.Errorf("instance tenancy %s, want %s", got.instance.Placement.Tenancy, tc.want)
			}
			if l := got.nodeClaim.Labels[awsv1.LabelInstanceTenancy]; l != string(tc.want) {
				t.Errorf("label %s=%q, want %q", awsv1.LabelInstanceTenancy, l, tc.want)
			}
		})
	}
}

// withPlacementGroup makes the class select the group and stands for the
// status controller having resolved it.
func withPlacementGroup(t *testing.T, name string, group *awsv1.PlacementGroup) *awsv1.EC2NodeClass {
	t.Helper()
	return reconciled(t, name, func(nc *awsv1.EC2NodeClass) {
		nc.Status.PlacementGroup = group
		if group != nil {
			nc.StatusConditions().SetTrue(awsv1.ConditionTypePlacementGroupReady)
		}
	})
}

// Launches into a class's placement group name the group (and a pinned
// partition) in the launch template, land the instance in it, and label
// the node with the group and partition; a cluster group's launch offers no
// type that cannot join it.
func TestPlacementGroupLaunch(t *testing.T) {
	kafka := &awsv1.PlacementGroup{ID: "pg-0b2", Name: "kafka", Strategy: awsv1.PlacementGroupStrategyPartition, PartitionCount: 3}
	training := &awsv1.PlacementGroup{ID: "pg-0a1", Name: "training", Strategy: awsv1.PlacementGroupStrategyCluster}
	for name, tc := range map[string]struct {
		group         *awsv1.PlacementGroup
		partitions    []string
		wantPartition int32
		wantLabel     string
	}{
		"partition pinned: the lowest allowed": {group: kafka, partitions: []string{"3", "2"}, wantPartition: 2, wantLabel: "2"},
		"partition chosen by EC2":              {group: kafka},
		"cluster":                              {group: training},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			w.EC2.AddPlacementGroups(
				fake.NewPlacementGroup("pg-0b2", "kafka", ec2types.PlacementStrategyPartition, 3),
				fake.NewPlacementGroup("pg-0a1", "training", ec2types.PlacementStrategyCluster, 0),
			)
			nodeClass := createNodeClass(t, newNodeClass(func(nc *awsv1.EC2NodeClass) {
				nc.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: awssdk.String(tc.group.Name)}
			}), true)
			withPlacementGroup(t, nodeClass.Name, tc.group)
			nc := withRequirement(newNodeClaim("pg", nodeClass.Name), karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeOnDemand)
			if tc.partitions != nil {
				nc = withRequirement(nc, awsv1.LabelPlacementGroupPartition, tc.partitions...)
			}
			got := launchAndInspect(t, w, nc)
			for _, p := range got.placements {
				if p == nil || awssdk.ToString(p.GroupId) != tc.group.ID || awssdk.ToInt32(p.PartitionNumber) != tc.wantPartition {
					t.Errorf("launch template Placement %+v, want group %s partition %d", p, tc.group.ID, tc.wantPartition)
				}
			}
			placement := got.instance.Placement
			if awssdk.ToString(placement.GroupId) != tc.group.ID {
				t.Errorf("instance placement group %q, want %s", awssdk.ToString(placement.GroupId), tc.group.ID)
			}
			labels := got.nodeClaim.Labels
			if labels[awsv1.LabelPlacementGroupID] != tc.group.ID {
				t.Errorf("label %s=%q, want %s", awsv1.LabelPlacementGroupID, labels[awsv1.LabelPlacementGroupID], tc.group.ID)
			}
			wantLabel := tc.wantLabel
			if tc.group.Strategy == awsv1.PlacementGroupStrategyPartition && tc.wantLabel == "" {
				// EC2 chose: the label is the partition DescribeInstances reports.
				wantLabel = strconv.Itoa(int(awssdk.ToInt32(placement.PartitionNumber)))
				if awssdk.ToInt32(placement.PartitionNumber) == 0 {
					t.Fatal("EC2 put the instance in no partition")
				}
			}
			if l, ok := labels[awsv1.LabelPlacementGroupPartition]; l != wantLabel || ok != (wantLabel != "") {
				t.Errorf("label %s=%q (set %v), want %q", awsv1.LabelPlacementGroupPartition, l, ok, wantLabel)
			}
			if tc.group.Strategy == awsv1.PlacementGroupStrategyCluster {
				for it := range got.types {
					if strings.HasPrefix(it, "t3.") || strings.HasPrefix(it, "t4g.") {
						t.Errorf("cluster group launch offers burstable %s", it)
					}
				}
			}
		})
	}
}

// A NodeClaim drifts when the group it was labelled with at launch is not
// the one the class resolves now: the group recreated (a new ID under the
// same name), the selector removed, or a group added to a class it
// launched from without one.
func TestPlacementGroupDrift(t *testing.T) {
	group := &awsv1.PlacementGroup{ID: "pg-0a1", Name: "training", Strategy: awsv1.PlacementGroupStrategyCluster}
	w := newWorld(t)
	w.EC2.AddPlacementGroups(fake.NewPlacementGroup("pg-0a1", "training", ec2types.PlacementStrategyCluster, 0))
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	withPlacementGroup(t, nodeClass.Name, group)
	inGroup := launch(t, w, amd64(newNodeClaim("pg-drift", nodeClass.Name)))
	if inGroup.Labels[awsv1.LabelPlacementGroupID] != "pg-0a1" {
		t.Fatalf("launched NodeClaim labels %v, want %s=pg-0a1", inGroup.Labels, awsv1.LabelPlacementGroupID)
	}
	if reason := isDrifted(t, w.Provider, inGroup); reason != "" {
		t.Fatalf("fresh NodeClaim: IsDrifted = %q, want not drifted", reason)
	}
	recreated := *group
	recreated.ID = "pg-0d4"
	withPlacementGroup(t, nodeClass.Name, &recreated)
	if reason := isDrifted(t, w.Provider, inGroup); reason != aws.PlacementGroupDrift {
		t.Errorf("group recreated: IsDrifted = %q, want %s", reason, aws.PlacementGroupDrift)
	}
	withPlacementGroup(t, nodeClass.Name, nil)
	if reason := isDrifted(t, w.Provider, inGroup); reason != aws.PlacementGroupDrift {
		t.Errorf("group removed: IsDrifted = %q, want %s", reason, aws.PlacementGroupDrift)
	}
	outside := launch(t, w, amd64(newNodeClaim("no-pg", nodeClass.Name)))
	if _, ok := outside.Labels[awsv1.LabelPlacementGroupID]; ok {
		t.Fatalf("NodeClaim launched without a group has labels %v", outside.Labels)
	}
	if reason := isDrifted(t, w.Provider, outside); reason != "" {
		t.Errorf("no group either side: IsDrifted = %q, want not drifted", reason)
	}
	withPlacementGroup(t, nodeClass.Name, group)
	if reason := isDrifted(t, w.Provider, outside); reason != aws.PlacementGroupDrift {
		t.Errorf("group added: IsDrifted = %q, want %s", reason, aws.PlacementGroupDrift)
	}
}
