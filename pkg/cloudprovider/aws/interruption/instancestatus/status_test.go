package instancestatus_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/interruption/instancestatus"
)

func summary(status ec2types.StatusType, since time.Time) *ec2types.InstanceStatusSummary {
	d := ec2types.InstanceStatusDetails{Name: ec2types.StatusNameReachability, Status: status}
	if !since.IsZero() {
		d.ImpairedSince = aws.Time(since)
	}
	return &ec2types.InstanceStatusSummary{Details: []ec2types.InstanceStatusDetails{d}}
}

func TestDecide(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	ok := summary(ec2types.StatusTypePassed, time.Time{})
	event := []ec2types.InstanceStatusEvent{{Code: ec2types.EventCodeSystemReboot, NotBefore: aws.Time(now.Add(72 * time.Hour))}}
	for name, tc := range map[string]struct {
		status ec2types.InstanceStatus
		want   []instancestatus.Category
	}{
		"healthy":                      {status: ec2types.InstanceStatus{InstanceStatus: ok, SystemStatus: ok}},
		"no checks reported":           {status: ec2types.InstanceStatus{}},
		"instance check failed 2m":     {status: ec2types.InstanceStatus{InstanceStatus: summary(ec2types.StatusTypeFailed, now.Add(-2*time.Minute)), SystemStatus: ok}, want: []instancestatus.Category{instancestatus.CategoryInstanceStatus}},
		"instance check failed 119s":   {status: ec2types.InstanceStatus{InstanceStatus: summary(ec2types.StatusTypeFailed, now.Add(-119*time.Second)), SystemStatus: ok}},
		"system check failed, no time": {status: ec2types.InstanceStatus{InstanceStatus: ok, SystemStatus: summary(ec2types.StatusTypeFailed, time.Time{})}, want: []instancestatus.Category{instancestatus.CategorySystemStatus}},
		"insufficient data":            {status: ec2types.InstanceStatus{InstanceStatus: summary(ec2types.StatusTypeInsufficientData, now.Add(-time.Hour))}},
		"future event":                 {status: ec2types.InstanceStatus{InstanceStatus: ok, SystemStatus: ok, Events: event}, want: []instancestatus.Category{instancestatus.CategoryEventStatus}},
		"everything": {status: ec2types.InstanceStatus{InstanceStatus: summary(ec2types.StatusTypeFailed, now.Add(-time.Hour)),
			SystemStatus: summary(ec2types.StatusTypeFailed, now.Add(-time.Hour)), Events: event},
			want: []instancestatus.Category{instancestatus.CategoryInstanceStatus, instancestatus.CategorySystemStatus, instancestatus.CategoryEventStatus}},
	} {
		t.Run(name, func(t *testing.T) {
			tc.status.InstanceId = aws.String("i-1")
			var want []instancestatus.Unhealthy
			if tc.want != nil {
				want = []instancestatus.Unhealthy{{InstanceID: "i-1", Categories: tc.want}}
			}
			if diff := cmp.Diff(want, instancestatus.Decide([]ec2types.InstanceStatus{tc.status}, now)); diff != "" {
				t.Errorf("Decide (-want,+got):\n%s", diff)
			}
		})
	}
}
