package fake

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func describeStatuses(t *testing.T, e *EC2, in *ec2.DescribeInstanceStatusInput) (ids []string, pages int) {
	t.Helper()
	for {
		out, err := e.DescribeInstanceStatus(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, s := range out.InstanceStatuses {
			ids = append(ids, aws.ToString(s.InstanceId))
		}
		if out.NextToken == nil {
			return ids, pages
		}
		in.NextToken = out.NextToken
	}
}

func filter(name string, values ...string) []ec2types.Filter {
	return []ec2types.Filter{{Name: aws.String(name), Values: values}}
}

func TestDescribeInstanceStatusReportsChecksAndEvents(t *testing.T) {
	e := newLaunchFake(t)
	out, err := e.CreateFleet(t.Context(), fleetInput(ec2types.DefaultTargetCapacityTypeOnDemand, 4, "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	ids := out.Instances[0].InstanceIds
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e.FailStatusCheck(ids[0], StatusCheckInstance, since)
	e.FailStatusCheck(ids[1], StatusCheckSystem, since)
	e.ScheduleEvent(ids[2], ec2types.EventCodeInstanceRetirement, since.Add(time.Hour))

	for name, tc := range map[string]struct {
		filters []ec2types.Filter
		want    []string
	}{
		"no filter: every running instance": {want: ids},
		"instance check impaired":           {filters: filter("instance-status.status", "impaired"), want: ids[:1]},
		"system check impaired":             {filters: filter("system-status.status", "impaired"), want: ids[1:2]},
		"scheduled event":                   {filters: filter("event.code", "instance-retirement", "system-reboot"), want: ids[2:3]},
		"healthy":                           {filters: filter("instance-status.status", "ok"), want: []string{ids[1], ids[2], ids[3]}},
	} {
		t.Run(name, func(t *testing.T) {
			got, _ := describeStatuses(t, e, &ec2.DescribeInstanceStatusInput{Filters: tc.filters})
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}

	got, err := e.DescribeInstanceStatus(t.Context(), &ec2.DescribeInstanceStatusInput{InstanceIds: ids[:1]})
	if err != nil {
		t.Fatal(err)
	}
	d := got.InstanceStatuses[0].InstanceStatus.Details[0]
	if d.Status != ec2types.StatusTypeFailed || !aws.ToTime(d.ImpairedSince).Equal(since) {
		t.Errorf("instance check detail = %s since %v, want failed since %v", d.Status, aws.ToTime(d.ImpairedSince), since)
	}
	e.FailStatusCheck(ids[0], StatusCheckInstance, time.Time{})
	if got, _ := describeStatuses(t, e, &ec2.DescribeInstanceStatusInput{Filters: filter("instance-status.status", "impaired")}); len(got) != 0 {
		t.Errorf("after recovery, impaired = %v, want none", got)
	}
	if _, err := e.DescribeInstanceStatus(t.Context(), &ec2.DescribeInstanceStatusInput{Filters: filter("bogus", "x")}); err == nil {
		t.Error("an unsupported filter was accepted")
	}
}

func TestDescribeInstanceStatusPagesAndSkipsStoppedInstances(t *testing.T) {
	e := newLaunchFake(t)
	out, err := e.CreateFleet(t.Context(), fleetInput(ec2types.DefaultTargetCapacityTypeOnDemand, 5, "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	ids := out.Instances[0].InstanceIds
	e.SetInstanceStatusPageSize(2)
	if got, pages := describeStatuses(t, e, &ec2.DescribeInstanceStatusInput{}); len(got) != 5 || pages != 3 {
		t.Errorf("got %d statuses in %d pages, want 5 in 3", len(got), pages)
	}
	if _, err := e.TerminateInstances(t.Context(), &ec2.TerminateInstancesInput{InstanceIds: ids[:1]}); err != nil {
		t.Fatal(err)
	}
	if got, _ := describeStatuses(t, e, &ec2.DescribeInstanceStatusInput{}); len(got) != 4 {
		t.Errorf("running statuses = %v, want 4 (the terminated instance left out)", got)
	}
	if got, _ := describeStatuses(t, e, &ec2.DescribeInstanceStatusInput{IncludeAllInstances: aws.Bool(true)}); len(got) != 5 {
		t.Errorf("with IncludeAllInstances = %v, want 5", got)
	}
}
