package launchtemplate_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/launchtemplate"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

func requirement(key string, op corev1.NodeSelectorOperator, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
}

// The launch template's Placement, as the CreateLaunchTemplate request
// carries it: the tenancy the NodeClaim allows (default unless only
// dedicated is), the class's placement group, and the partition the
// NodeClaim pins in a partition group.
func TestEnsureAllRendersPlacement(t *testing.T) {
	partition := &awsv1.PlacementGroup{ID: "pg-0b2", Name: "kafka", Strategy: awsv1.PlacementGroupStrategyPartition, PartitionCount: 3}
	cluster := &awsv1.PlacementGroup{ID: "pg-0a1", Name: "training", Strategy: awsv1.PlacementGroupStrategyCluster}
	for name, tc := range map[string]struct {
		group        *awsv1.PlacementGroup
		requirements []karpv1.NodeSelectorRequirementWithMinValues
		want         *ec2types.LaunchTemplatePlacementRequest
	}{
		"no requirement: default tenancy, no group": {
			want: &ec2types.LaunchTemplatePlacementRequest{Tenancy: ec2types.TenancyDefault},
		},
		"dedicated required": {
			requirements: []karpv1.NodeSelectorRequirementWithMinValues{requirement(awsv1.LabelInstanceTenancy, corev1.NodeSelectorOpIn, "dedicated")},
			want:         &ec2types.LaunchTemplatePlacementRequest{Tenancy: ec2types.TenancyDedicated},
		},
		"default excluded": {
			requirements: []karpv1.NodeSelectorRequirementWithMinValues{requirement(awsv1.LabelInstanceTenancy, corev1.NodeSelectorOpNotIn, "default")},
			want:         &ec2types.LaunchTemplatePlacementRequest{Tenancy: ec2types.TenancyDedicated},
		},
		"both allowed: default": {
			requirements: []karpv1.NodeSelectorRequirementWithMinValues{requirement(awsv1.LabelInstanceTenancy, corev1.NodeSelectorOpIn, "dedicated", "default")},
			want:         &ec2types.LaunchTemplatePlacementRequest{Tenancy: ec2types.TenancyDefault},
		},
		"a cluster group": {
			group: cluster,
			want:  &ec2types.LaunchTemplatePlacementRequest{Tenancy: ec2types.TenancyDefault, GroupId: aws.String("pg-0a1")},
		},
		"a partition group, no partition pinned: EC2 picks": {
			group: partition,
			want:  &ec2types.LaunchTemplatePlacementRequest{Tenancy: ec2types.TenancyDefault, GroupId: aws.String("pg-0b2")},
		},
		"a partition group, the lowest pinned partition, dedicated": {
			group: partition,
			requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				requirement(awsv1.LabelPlacementGroupPartition, corev1.NodeSelectorOpIn, "3", "2"),
				requirement(awsv1.LabelInstanceTenancy, corev1.NodeSelectorOpIn, "dedicated"),
			},
			want: &ec2types.LaunchTemplatePlacementRequest{Tenancy: ec2types.TenancyDedicated, GroupId: aws.String("pg-0b2"), PartitionNumber: aws.Int32(2)},
		},
		"a partition pinned without a partition group is ignored": {
			group:        cluster,
			requirements: []karpv1.NodeSelectorRequirementWithMinValues{requirement(awsv1.LabelPlacementGroupPartition, corev1.NodeSelectorOpIn, "2")},
			want:         &ec2types.LaunchTemplatePlacementRequest{Tenancy: ec2types.TenancyDefault, GroupId: aws.String("pg-0a1")},
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := fake.NewEC2()
			p := launchtemplate.NewProvider(e, clocktesting.NewFakeClock(time.Now()), opts)
			req := request(nodeClass(func(nc *awsv1.EC2NodeClass) { nc.Status.PlacementGroup = tc.group }), karpv1.CapacityTypeOnDemand,
				instanceType("m5.large", "amd64", 29))
			req.NodeClaim.Spec.Requirements = tc.requirements
			lts, err := p.EnsureAll(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			data, ok := e.LaunchTemplateData(lts[0].Name)
			if !ok {
				t.Fatalf("launch template %s was not created", lts[0].Name)
			}
			if diff := cmp.Diff(tc.want, data.Placement, cmp.AllowUnexported(ec2types.LaunchTemplatePlacementRequest{})); diff != "" {
				t.Errorf("Placement (-want,+got):\n%s", diff)
			}
		})
	}
}

// Dedicated and default launches of the same class never share a launch
// template.
func TestTenancySeparatesLaunchTemplates(t *testing.T) {
	e := fake.NewEC2()
	p := launchtemplate.NewProvider(e, clocktesting.NewFakeClock(time.Now()), opts)
	def := request(nodeClass(nil), karpv1.CapacityTypeOnDemand, instanceType("m5.large", "amd64", 29))
	dedicated := request(nodeClass(nil), karpv1.CapacityTypeOnDemand, instanceType("m5.large", "amd64", 29))
	dedicated.NodeClaim.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{requirement(awsv1.LabelInstanceTenancy, corev1.NodeSelectorOpIn, "dedicated")}
	a, err := p.EnsureAll(t.Context(), def)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.EnsureAll(t.Context(), dedicated)
	if err != nil {
		t.Fatal(err)
	}
	if a[0].Name == b[0].Name {
		t.Errorf("default and dedicated launches share launch template %s", a[0].Name)
	}
	if got := launchtemplate.Tenancy(dedicated.NodeClaim); got != ec2types.TenancyDedicated {
		t.Errorf("Tenancy = %s, want dedicated", got)
	}
}
