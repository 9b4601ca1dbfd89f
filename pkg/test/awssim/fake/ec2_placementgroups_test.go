package fake

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
)

func TestDescribePlacementGroups(t *testing.T) {
	e := NewEC2()
	e.AddPlacementGroups(
		NewPlacementGroup("pg-1", "training", ec2types.PlacementStrategyCluster, 0),
		NewPlacementGroup("pg-2", "kafka", ec2types.PlacementStrategyPartition, 3),
	)
	e.DeletePlacementGroup("pg-1")
	available := []ec2types.Filter{{Name: aws.String("state"), Values: []string{"available"}}}
	for name, tc := range map[string]struct {
		in      *ec2.DescribePlacementGroupsInput
		want    []string
		errCode string
	}{
		"all":                          {in: &ec2.DescribePlacementGroupsInput{}, want: []string{"pg-1", "pg-2"}},
		"available only":               {in: &ec2.DescribePlacementGroupsInput{Filters: available}, want: []string{"pg-2"}},
		"by id":                        {in: &ec2.DescribePlacementGroupsInput{GroupIds: []string{"pg-2"}}, want: []string{"pg-2"}},
		"by name, deleted filtered":    {in: &ec2.DescribePlacementGroupsInput{GroupNames: []string{"training"}, Filters: available}},
		"an unknown name is an error":  {in: &ec2.DescribePlacementGroupsInput{GroupNames: []string{"nope"}}, errCode: CodePlacementGroupUnknown},
		"an unknown id is an error":    {in: &ec2.DescribePlacementGroupsInput{GroupIds: []string{"pg-9"}}, errCode: CodePlacementGroupUnknown},
		"an unknown filter is refused": {in: &ec2.DescribePlacementGroupsInput{Filters: []ec2types.Filter{{Name: aws.String("color")}}}, errCode: "InvalidParameterValue"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := e.DescribePlacementGroups(t.Context(), tc.in)
			var apiErr smithy.APIError
			if tc.errCode != "" {
				if !errors.As(err, &apiErr) || apiErr.ErrorCode() != tc.errCode {
					t.Fatalf("err = %v, want %s", err, tc.errCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, g := range out.PlacementGroups {
				got = append(got, aws.ToString(g.GroupId))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("groups = %v, want %v", got, tc.want)
			}
		})
	}
}

// Instances launched from a template naming a placement group record it in
// their Placement, with the partition the template pins or, unpinned, the
// partitions in turn; the tenancy is recorded too.
func TestFleetRecordsPlacement(t *testing.T) {
	e := newLaunchFake(t)
	e.AddPlacementGroups(NewPlacementGroup("pg-2", "kafka", ec2types.PlacementStrategyPartition, 2))
	for name, placement := range map[string]*ec2types.LaunchTemplatePlacementRequest{
		"lt-free":   {GroupId: aws.String("pg-2"), Tenancy: ec2types.TenancyDedicated},
		"lt-pinned": {GroupId: aws.String("pg-2"), PartitionNumber: aws.Int32(2)},
	} {
		if _, err := e.CreateLaunchTemplate(t.Context(), &ec2.CreateLaunchTemplateInput{
			LaunchTemplateName: aws.String(name),
			LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-1"), Placement: placement},
		}); err != nil {
			t.Fatal(err)
		}
	}
	launch := func(lt string, n int32) []ec2types.Instance {
		in := fleetInput(ec2types.DefaultTargetCapacityTypeOnDemand, n, "m5.large")
		in.LaunchTemplateConfigs[0].LaunchTemplateSpecification.LaunchTemplateName = aws.String(lt)
		out, err := e.CreateFleet(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, fi := range out.Instances {
			ids = append(ids, fi.InstanceIds...)
		}
		described, err := e.DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{InstanceIds: ids})
		if err != nil {
			t.Fatal(err)
		}
		var insts []ec2types.Instance
		for _, r := range described.Reservations {
			insts = append(insts, r.Instances...)
		}
		return insts
	}
	free := launch("lt-free", 2)
	partitions := map[int32]bool{}
	for _, inst := range free {
		p := inst.Placement
		if aws.ToString(p.GroupId) != "pg-2" || aws.ToString(p.GroupName) != "kafka" || p.Tenancy != ec2types.TenancyDedicated {
			t.Errorf("placement %+v, want pg-2/kafka, dedicated", p)
		}
		partitions[aws.ToInt32(p.PartitionNumber)] = true
	}
	if !partitions[1] || !partitions[2] {
		t.Errorf("unpinned partitions %v, want 1 and 2 in turn", partitions)
	}
	for _, inst := range launch("lt-pinned", 2) {
		if p := inst.Placement; aws.ToInt32(p.PartitionNumber) != 2 || p.Tenancy != ec2types.TenancyDefault {
			t.Errorf("pinned placement %+v, want partition 2, default tenancy", p)
		}
	}
}

// A spread group holds seven instances a zone; past that EC2 refuses the
// zone's pools with InsufficientInstanceCapacity and a message naming the
// spread group's limit, and a terminated member frees a place.
func TestSpreadGroupLimitPerZone(t *testing.T) {
	e := newLaunchFake(t)
	e.AddPlacementGroups(NewPlacementGroup("pg-s", "spread", ec2types.PlacementStrategySpread, 0))
	if _, err := e.CreateLaunchTemplate(t.Context(), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("lt-spread"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-1"),
			Placement: &ec2types.LaunchTemplatePlacementRequest{GroupId: aws.String("pg-s")}},
	}); err != nil {
		t.Fatal(err)
	}
	launch := func(n int32) *ec2.CreateFleetOutput {
		in := fleetInput(ec2types.DefaultTargetCapacityTypeOnDemand, n, "m5.large")
		in.LaunchTemplateConfigs[0].LaunchTemplateSpecification.LaunchTemplateName = aws.String("lt-spread")
		in.LaunchTemplateConfigs[0].Overrides = in.LaunchTemplateConfigs[0].Overrides[:1] // zone-a only
		out, err := e.CreateFleet(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	out := launch(9)
	if got := launchedPools(out)["m5.large/zone-a"]; got != 7 {
		t.Errorf("launched %d into the spread group in zone-a, want 7", got)
	}
	if len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != CodeInsufficientInstanceCapacity ||
		!strings.Contains(aws.ToString(out.Errors[0].ErrorMessage), "limit of instances in this spread placement group") {
		t.Fatalf("errors %+v, want one InsufficientInstanceCapacity naming the spread group's limit", out.Errors)
	}
	if _, err := e.TerminateInstances(t.Context(), &ec2.TerminateInstancesInput{InstanceIds: out.Instances[0].InstanceIds[:1]}); err != nil {
		t.Fatal(err)
	}
	if got := launchedPools(launch(2))["m5.large/zone-a"]; got != 1 {
		t.Errorf("after one member terminated, launched %d, want 1", got)
	}
}
