package awssim

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// TestEC2InstanceStatusOverTheWire pages DescribeInstanceStatus through
// the real ec2.Client: the filters reach the fake, and the failed check's
// time and the scheduled event come back.
func TestEC2InstanceStatusOverTheWire(t *testing.T) {
	backend := fake.NewEC2()
	backend.SetPrice(fake.CapacityPool{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: "on-demand"}, 0.096)
	ctx := t.Context()
	if _, err := backend.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("lt"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-1")}}); err != nil {
		t.Fatal(err)
	}
	fleet, err := backend.CreateFleet(ctx, &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(5), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand,
		},
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String("lt"), Version: aws.String("$Latest")},
			Overrides: []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m5.large", AvailabilityZone: aws.String("us-west-2a"),
				SubnetId: aws.String("subnet-a")}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ids := fleet.Instances[0].InstanceIds
	since := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, id := range ids[:3] {
		backend.FailStatusCheck(id, fake.StatusCheckSystem, since)
	}
	backend.ScheduleEvent(ids[3], ec2types.EventCodeSystemMaintenance, since)
	backend.SetInstanceStatusPageSize(2)
	client := ec2Client(serve(t, NewEC2Handler(backend)), noRetries())

	var impaired []ec2types.InstanceStatus
	pages := ec2.NewDescribeInstanceStatusPaginator(client, &ec2.DescribeInstanceStatusInput{
		Filters: []ec2types.Filter{{Name: aws.String("system-status.status"), Values: []string{"impaired"}}},
	})
	n := 0
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n++
		impaired = append(impaired, page.InstanceStatuses...)
	}
	if len(impaired) != 3 || n != 2 {
		t.Fatalf("got %d impaired statuses in %d pages, want 3 in 2", len(impaired), n)
	}
	d := impaired[0].SystemStatus.Details[0]
	if d.Status != ec2types.StatusTypeFailed || !aws.ToTime(d.ImpairedSince).Equal(since) || impaired[0].InstanceStatus.Status != ec2types.SummaryStatusOk {
		t.Errorf("system check = %s since %v (instance check %s), want failed since %v (instance check ok)",
			d.Status, aws.ToTime(d.ImpairedSince), impaired[0].InstanceStatus.Status, since)
	}
	out, err := client.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{
		Filters: []ec2types.Filter{{Name: aws.String("event.code"), Values: []string{"system-maintenance"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.InstanceStatuses) != 1 || aws.ToString(out.InstanceStatuses[0].InstanceId) != ids[3] ||
		len(out.InstanceStatuses[0].Events) != 1 || out.InstanceStatuses[0].Events[0].Code != ec2types.EventCodeSystemMaintenance {
		t.Errorf("scheduled events = %+v, want %s's system-maintenance", out.InstanceStatuses, ids[3])
	}
}
