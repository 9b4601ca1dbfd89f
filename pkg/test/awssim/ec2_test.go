package awssim

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// TestEC2LaunchLifecycle drives the launch calls karp makes through the real
// ec2.Client against the stateful fake: a launch template, a fleet, the
// instances it launched found by tag and paged, tagged, terminated, and the
// template deleted.
func TestEC2LaunchLifecycle(t *testing.T) {
	backend := fake.NewEC2()
	backend.AddSubnets(
		fake.NewSubnet("subnet-a", "us-west-2a", "usw2-az1", 100, nil),
		fake.NewSubnet("subnet-b", "us-west-2b", "usw2-az2", 100, nil),
	)
	for _, zone := range []string{"us-west-2a", "us-west-2b"} {
		backend.SetPrice(fake.CapacityPool{InstanceType: "m5.large", Zone: zone, CapacityType: "on-demand"}, 0.096)
		backend.SetPrice(fake.CapacityPool{InstanceType: "m5.large", Zone: zone, CapacityType: "spot"}, 0.04)
	}
	backend.SetTerminationDelay(0)
	client := ec2Client(serve(t, NewEC2Handler(backend)), noRetries())
	ctx := t.Context()

	if _, err := client.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("karpenter.k8s.aws/123"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:  aws.String("ami-0123"),
			UserData: aws.String("IyEvYmluL2Jhc2g="),
			MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
				HttpTokens: ec2types.LaunchTemplateHttpTokensStateRequired, HttpPutResponseHopLimit: aws.Int32(1),
			},
			NetworkInterfaces: []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
				{DeviceIndex: aws.Int32(0), Groups: []string{"sg-1", "sg-2"}},
			},
		},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate,
			Tags: []ec2types.Tag{{Key: aws.String("karpenter.k8s.aws/cluster"), Value: aws.String("my-cluster")}}}},
	}); err != nil {
		t.Fatal(err)
	}
	data, ok := backend.LaunchTemplateData("karpenter.k8s.aws/123")
	if !ok || aws.ToString(data.ImageId) != "ami-0123" || len(data.NetworkInterfaces[0].Groups) != 2 ||
		data.MetadataOptions.HttpTokens != ec2types.LaunchTemplateHttpTokensStateRequired {
		t.Fatalf("the fake holds launch template data %+v, want what was sent", data)
	}

	fleet, err := client.CreateFleet(ctx, &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(3), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeSpot,
		},
		SpotOptions: &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized},
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{
				LaunchTemplateName: aws.String("karpenter.k8s.aws/123"), Version: aws.String("$Latest"),
			},
			Overrides: []ec2types.FleetLaunchTemplateOverridesRequest{
				{InstanceType: "m5.large", SubnetId: aws.String("subnet-a"), AvailabilityZone: aws.String("us-west-2a")},
				{InstanceType: "m5.large", SubnetId: aws.String("subnet-b"), AvailabilityZone: aws.String("us-west-2b")},
			},
		}},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance,
			Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/nodepool"), Value: aws.String("default")}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, inst := range fleet.Instances {
		ids = append(ids, inst.InstanceIds...)
		if inst.Lifecycle != ec2types.InstanceLifecycleSpot {
			t.Errorf("launched %v as %q, want spot", inst.InstanceIds, inst.Lifecycle)
		}
	}
	if len(ids) != 3 {
		t.Fatalf("the fleet launched %v, want 3 instances", ids)
	}

	if _, err := client.CreateTags(ctx, &ec2.CreateTagsInput{Resources: ids[:1],
		Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/nodeclaim"), Value: aws.String("default-abcde")}}}); err != nil {
		t.Fatal(err)
	}
	byTag := describeAll(t, client, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:karpenter.sh/nodeclaim"), Values: []string{"default-abcde"}},
	}})
	if len(byTag) != 1 || aws.ToString(byTag[0].InstanceId) != ids[0] {
		t.Errorf("the nodeclaim tag found %d instances, want only %s", len(byTag), ids[0])
	}
	running := &ec2.DescribeInstancesInput{MaxResults: aws.Int32(5), Filters: []ec2types.Filter{
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}},
		{Name: aws.String("tag:karpenter.sh/nodepool"), Values: []string{"default"}},
	}}
	if got := describeAll(t, client, running); len(got) != 3 {
		t.Errorf("paging the running instances found %d, want 3", len(got))
	}

	term, err := client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids[1:]})
	if err != nil {
		t.Fatal(err)
	}
	if len(term.TerminatingInstances) != 2 || term.TerminatingInstances[0].CurrentState == nil {
		t.Errorf("terminating returned %+v, want two state changes", term.TerminatingInstances)
	}
	if got := describeAll(t, client, running); len(got) != 1 {
		t.Errorf("after terminating two, %d are running, want 1", len(got))
	}

	templates, err := client.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:karpenter.k8s.aws/cluster"), Values: []string{"my-cluster"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(templates.LaunchTemplates) != 1 {
		t.Fatalf("found %d launch templates by tag, want 1", len(templates.LaunchTemplates))
	}
	if _, err := client.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("karpenter.k8s.aws/123")}); err != nil {
		t.Fatal(err)
	}
	if _, ok := backend.LaunchTemplateData("karpenter.k8s.aws/123"); ok {
		t.Error("the launch template survived its deletion")
	}
}

// describeAll pages DescribeInstances with the SDK paginator.
func describeAll(t *testing.T, client *ec2.Client, in *ec2.DescribeInstancesInput) []ec2types.Instance {
	t.Helper()
	var out []ec2types.Instance
	pages := ec2.NewDescribeInstancesPaginator(client, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Reservations {
			out = append(out, r.Instances...)
		}
	}
	return out
}
