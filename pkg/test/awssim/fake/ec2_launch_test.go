package fake

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
)

func newLaunchFake(t *testing.T) *EC2 {
	t.Helper()
	e := NewEC2()
	_, err := e.CreateLaunchTemplate(t.Context(), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("lt-a"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId: aws.String("ami-1"),
			NetworkInterfaces: []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
				{DeviceIndex: aws.Int32(0), Groups: []string{"sg-1"}},
			},
		},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate,
			Tags: []ec2types.Tag{{Key: aws.String("eks:eks-cluster-name"), Value: aws.String("c")}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for pool, price := range map[CapacityPool]float64{
		{"m5.large", "zone-a", "on-demand"}:  0.096,
		{"m5.large", "zone-b", "on-demand"}:  0.096,
		{"c5.large", "zone-a", "on-demand"}:  0.085,
		{"c5.large", "zone-b", "on-demand"}:  0.085,
		{"m5.large", "zone-a", "spot"}:       0.04,
		{"c5.large", "zone-b", "spot"}:       0.03,
		{"c5.large", "zone-a", "spot"}:       0.05,
		{"m5.large", "zone-b", "spot"}:       0.06,
		{"t3.micro", "zone-a", "on-demand"}:  0.01,
		{"t3.micro", "zone-b", "on-demand"}:  0.01,
		{"unpriced", "zone-a", "on-demand"}:  0.5,
		{"r5.large", "zone-a", "on-demand"}:  0.126,
		{"r5.large", "zone-b", "on-demand"}:  0.126,
		{"m5.xlarge", "zone-a", "on-demand"}: 0.192,
	} {
		e.SetPrice(pool, price)
	}
	return e
}

func fleetInput(capacityType ec2types.DefaultTargetCapacityType, n int32, types ...string) *ec2.CreateFleetInput {
	var overrides []ec2types.FleetLaunchTemplateOverridesRequest
	for _, it := range types {
		for _, zone := range []string{"zone-a", "zone-b"} {
			overrides = append(overrides, ec2types.FleetLaunchTemplateOverridesRequest{
				InstanceType: ec2types.InstanceType(it), AvailabilityZone: aws.String(zone), SubnetId: aws.String("subnet-" + zone),
			})
		}
	}
	return &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(n), DefaultTargetCapacityType: capacityType,
		},
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String("lt-a"), Version: aws.String("$Latest")},
			Overrides:                   overrides,
		}},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance,
			Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/nodepool"), Value: aws.String("default")}}}},
	}
}

func launchedPools(out *ec2.CreateFleetOutput) map[string]int {
	got := map[string]int{}
	for _, inst := range out.Instances {
		got[string(inst.InstanceType)+"/"+aws.ToString(inst.AvailabilityZone)] += len(inst.InstanceIds)
	}
	return got
}

func TestCreateFleetPicksTheCheapestPool(t *testing.T) {
	tests := map[string]struct {
		capacityType ec2types.DefaultTargetCapacityType
		types        []string
		want         string
	}{
		"on-demand lowest price": {ec2types.DefaultTargetCapacityTypeOnDemand, []string{"m5.large", "c5.large"}, "c5.large/zone-a"},
		"spot cheapest pool":     {ec2types.DefaultTargetCapacityTypeSpot, []string{"m5.large", "c5.large"}, "c5.large/zone-b"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newLaunchFake(t)
			out, err := e.CreateFleet(t.Context(), fleetInput(tc.capacityType, 1, tc.types...))
			if err != nil {
				t.Fatal(err)
			}
			got := launchedPools(out)
			if len(got) != 1 || got[tc.want] != 1 {
				t.Errorf("launched %v, want one %s", got, tc.want)
			}
		})
	}
}

func TestCreateFleetReportsPoolsOutOfCapacity(t *testing.T) {
	e := newLaunchFake(t)
	e.SetCapacity(CapacityPool{"c5.large", "zone-a", "on-demand"}, 0, "")
	e.SetCapacity(CapacityPool{"c5.large", "zone-b", "on-demand"}, 1, CodeUnfulfillableCapacity)
	out, err := e.CreateFleet(t.Context(), fleetInput(ec2types.DefaultTargetCapacityTypeOnDemand, 3, "m5.large", "c5.large"))
	if err != nil {
		t.Fatal(err)
	}
	if got := launchedPools(out); got["c5.large/zone-b"] != 1 || got["m5.large/zone-a"] != 2 {
		t.Errorf("launched %v, want 1 c5.large in zone-b then 2 m5.large in zone-a", got)
	}
	codes := map[string]string{}
	for _, fe := range out.Errors {
		codes[string(fe.LaunchTemplateAndOverrides.Overrides.InstanceType)+"/"+aws.ToString(fe.LaunchTemplateAndOverrides.Overrides.AvailabilityZone)] = aws.ToString(fe.ErrorCode)
	}
	want := map[string]string{"c5.large/zone-a": CodeInsufficientInstanceCapacity, "c5.large/zone-b": CodeUnfulfillableCapacity}
	if len(codes) != len(want) || codes["c5.large/zone-a"] != want["c5.large/zone-a"] || codes["c5.large/zone-b"] != want["c5.large/zone-b"] {
		t.Errorf("errors %v, want %v", codes, want)
	}

	e.SetCapacity(CapacityPool{"m5.large", "zone-a", "on-demand"}, 0, "")
	e.SetCapacity(CapacityPool{"m5.large", "zone-b", "on-demand"}, 0, "")
	out, err = e.CreateFleet(t.Context(), fleetInput(ec2types.DefaultTargetCapacityTypeOnDemand, 1, "m5.large", "c5.large"))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 0 || len(out.Errors) != 4 {
		t.Errorf("with every pool exhausted got %d instances and %d errors, want none and 4", len(out.Instances), len(out.Errors))
	}
}

func TestCreateFleetClientTokenIsIdempotent(t *testing.T) {
	e := newLaunchFake(t)
	in := fleetInput(ec2types.DefaultTargetCapacityTypeOnDemand, 1, "m5.large")
	in.ClientToken = aws.String("token-1")
	first, err := e.CreateFleet(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.CreateFleet(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	if first.Instances[0].InstanceIds[0] != second.Instances[0].InstanceIds[0] || len(e.Instances()) != 1 {
		t.Errorf("a repeated client token launched again: %d instances", len(e.Instances()))
	}
}

func TestCreateFleetUnknownLaunchTemplate(t *testing.T) {
	e := newLaunchFake(t)
	in := fleetInput(ec2types.DefaultTargetCapacityTypeOnDemand, 1, "m5.large")
	in.LaunchTemplateConfigs[0].LaunchTemplateSpecification.LaunchTemplateName = aws.String("missing")
	_, err := e.CreateFleet(t.Context(), in)
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != codeLaunchTemplateNameNotFound {
		t.Errorf("got %v, want %s", err, codeLaunchTemplateNameNotFound)
	}
}

// A dry run of a launch call answers DryRunOperation and changes nothing.
func TestLaunchDryRuns(t *testing.T) {
	e := newLaunchFake(t)
	fleet := fleetInput(ec2types.DefaultTargetCapacityTypeOnDemand, 1, "m5.large")
	fleet.DryRun = aws.Bool(true)
	if _, err := e.CreateFleet(t.Context(), fleet); apiCode(err) != "DryRunOperation" {
		t.Errorf("CreateFleet dry run: error %v, want DryRunOperation", err)
	}
	template := &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("lt-dry"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{}, DryRun: aws.Bool(true)}
	if _, err := e.CreateLaunchTemplate(t.Context(), template); apiCode(err) != "DryRunOperation" {
		t.Errorf("CreateLaunchTemplate dry run: error %v, want DryRunOperation", err)
	}
	if n := len(e.Instances()); n != 0 {
		t.Errorf("%d instances after a dry run, want none", n)
	}
	if _, ok := e.LaunchTemplateData("lt-dry"); ok {
		t.Error("a dry run created launch template lt-dry")
	}
}

func TestDescribeTerminateAndTag(t *testing.T) {
	ctx := t.Context()
	e := newLaunchFake(t)
	out, err := e.CreateFleet(ctx, fleetInput(ec2types.DefaultTargetCapacityTypeOnDemand, 3, "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	ids := out.Instances[0].InstanceIds
	if _, err := e.CreateTags(ctx, &ec2.CreateTagsInput{Resources: ids[:1], Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/nodeclaim"), Value: aws.String("a")}}}); err != nil {
		t.Fatal(err)
	}
	count := func(in *ec2.DescribeInstancesInput) int {
		t.Helper()
		n := 0
		for {
			page, err := e.DescribeInstances(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page.Reservations {
				n += len(r.Instances)
			}
			if page.NextToken == nil {
				return n
			}
			in.NextToken = page.NextToken
		}
	}
	byTag := &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("tag:karpenter.sh/nodeclaim"), Values: []string{"a"}}}}
	if n := count(byTag); n != 1 {
		t.Errorf("tag filter matched %d instances, want 1", n)
	}
	running := func() *ec2.DescribeInstancesInput {
		return &ec2.DescribeInstancesInput{MaxResults: aws.Int32(1), Filters: []ec2types.Filter{
			{Name: aws.String("instance-state-name"), Values: []string{"running", "shutting-down"}},
			{Name: aws.String("tag-key"), Values: []string{"karpenter.sh/nodepool"}},
		}}
	}
	if n := count(running()); n != 3 {
		t.Errorf("paginated listing found %d instances, want 3", n)
	}
	e.SetTerminationDelay(0)
	term, err := e.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids[:2]})
	if err != nil {
		t.Fatal(err)
	}
	if len(term.TerminatingInstances) != 2 {
		t.Errorf("terminated %d, want 2", len(term.TerminatingInstances))
	}
	if n := count(running()); n != 1 {
		t.Errorf("after terminating two, %d are running, want 1", n)
	}
	if _, err := e.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-missing"}}); err == nil {
		t.Error("describing an unknown instance ID succeeded")
	}
	if got := e.Calls("DescribeInstances"); got < 5 {
		t.Errorf("counted %d DescribeInstances calls, want every page counted", got)
	}
}

func TestCreateFleetLaunchesInTheSubnetsZone(t *testing.T) {
	e := newLaunchFake(t)
	e.AddSubnets(NewSubnet("subnet-b", "zone-b", "zb", 100, nil))
	in := fleetInput(ec2types.DefaultTargetCapacityTypeOnDemand, 1, "m5.large")
	in.LaunchTemplateConfigs[0].Overrides = []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m5.large", SubnetId: aws.String("subnet-b")}}
	out, err := e.CreateFleet(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	if got := launchedPools(out); got["m5.large/zone-b"] != 1 {
		t.Errorf("launched %v, want m5.large in subnet-b's zone-b", got)
	}
}

// A prioritized fleet launches by the overrides' priorities (the lowest
// first), not by EC2's prices; the others ignore priorities.
func TestPrioritizedFleetFollowsPriorities(t *testing.T) {
	for name, tc := range map[string]struct {
		prioritized bool
		want        string
	}{
		"lowest-price takes the cheapest": {want: "c5.large/zone-a"},
		"prioritized takes priority 1":    {prioritized: true, want: "m5.large/zone-b"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newLaunchFake(t)
			in := fleetInput(ec2types.DefaultTargetCapacityTypeOnDemand, 1, "c5.large", "m5.large")
			in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
			if tc.prioritized {
				in.OnDemandOptions.AllocationStrategy = ec2types.FleetOnDemandAllocationStrategyPrioritized
			}
			for i := range in.LaunchTemplateConfigs[0].Overrides {
				o := &in.LaunchTemplateConfigs[0].Overrides[i]
				o.Priority = aws.Float64(float64(10 + i))
				if string(o.InstanceType) == "m5.large" && aws.ToString(o.AvailabilityZone) == "zone-b" {
					o.Priority = aws.Float64(1)
				}
			}
			out, err := e.CreateFleet(t.Context(), in)
			if err != nil {
				t.Fatal(err)
			}
			if got := launchedPools(out); got[tc.want] != 1 {
				t.Errorf("launched %v, want %s", got, tc.want)
			}
		})
	}
}
