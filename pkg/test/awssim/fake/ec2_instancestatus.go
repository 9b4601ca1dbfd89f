package fake

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// StatusCheck names one of EC2's two status checks of an instance.
type StatusCheck string

// The status checks a test can fail.
const (
	// StatusCheckInstance is the instance's own check (its OS, its
	// network configuration).
	StatusCheckInstance StatusCheck = "instance"
	// StatusCheckSystem is the check of the host the instance runs on.
	StatusCheckSystem StatusCheck = "system"
)

// statusState holds what tests set about instances' health; an instance
// without an entry passes both checks and has no scheduled event.
type statusState struct {
	health map[string]*instanceHealth // by instance ID
	// pageSize caps the statuses of one DescribeInstanceStatus page when
	// the caller sets no MaxResults (0: all on one page).
	pageSize int
}

type instanceHealth struct {
	instanceImpaired time.Time // zero: passed
	systemImpaired   time.Time
	events           []ec2types.InstanceStatusEvent
}

func (s *statusState) of(id string) *instanceHealth {
	if s.health == nil {
		s.health = map[string]*instanceHealth{}
	}
	if s.health[id] == nil {
		s.health[id] = &instanceHealth{}
	}
	return s.health[id]
}

// FailStatusCheck makes the instance's check fail (reachability), impaired
// since the given time; a zero since makes it pass again.
func (e *EC2) FailStatusCheck(instanceID string, check StatusCheck, since time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	h := e.status.of(instanceID)
	if check == StatusCheckSystem {
		h.systemImpaired = since
		return
	}
	h.instanceImpaired = since
}

// ScheduleEvent schedules an EC2 event (instance-retirement,
// system-maintenance, …) for the instance, not before the given time.
func (e *EC2) ScheduleEvent(instanceID string, code ec2types.EventCode, notBefore time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	h := e.status.of(instanceID)
	h.events = append(h.events, ec2types.InstanceStatusEvent{
		Code:            code,
		Description:     aws.String(fmt.Sprintf("The instance is scheduled for %s", code)),
		InstanceEventId: aws.String(fmt.Sprintf("instance-event-%s-%d", instanceID, len(h.events))),
		NotBefore:       aws.Time(notBefore),
	})
}

// SetInstanceStatusPageSize makes DescribeInstanceStatus answer at most n
// statuses per page when the caller sets no MaxResults, so tests see the
// caller follow NextToken (0: one page).
func (e *EC2) SetInstanceStatusPageSize(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.status.pageSize = n
}

// DescribeInstanceStatus answers the status checks and scheduled events of
// the account's running instances (every state with IncludeAllInstances),
// by InstanceIds and the filters instance-id, instance-state-name,
// availability-zone, instance-status.status, instance-status.reachability,
// system-status.status, system-status.reachability and event.code,
// paginated. An unknown ID fails the call, as in EC2.
func (e *EC2) DescribeInstanceStatus(_ context.Context, in *ec2.DescribeInstanceStatusInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceStatusOutput, error) {
	if err := e.enterCall("DescribeInstanceStatus", in.DryRun); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	if err := e.launch.known(in.InstanceIds); err != nil {
		return nil, err
	}
	var all []ec2types.InstanceStatus
	for _, view := range e.launch.views(in.InstanceIds) {
		if !aws.ToBool(in.IncludeAllInstances) && view.State.Name != ec2types.InstanceStateNameRunning {
			continue
		}
		status := e.status.answer(view)
		ok, err := matchFilters(in.Filters, instanceStatusFields(status))
		if err != nil {
			return nil, err
		}
		if ok {
			all = append(all, status)
		}
	}
	maxResults := in.MaxResults
	if maxResults == nil && e.status.pageSize > 0 {
		maxResults = aws.Int32(int32(e.status.pageSize))
	}
	items, next, err := page(all, maxResults, in.NextToken, 1, 1000)
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeInstanceStatusOutput{InstanceStatuses: items, NextToken: next}, nil
}

// answer is the instance's status as EC2 reports it. The caller holds e.mu.
func (s *statusState) answer(view ec2types.Instance) ec2types.InstanceStatus {
	id := aws.ToString(view.InstanceId)
	h := s.health[id]
	if h == nil {
		h = &instanceHealth{}
	}
	return ec2types.InstanceStatus{
		InstanceId:       aws.String(id),
		AvailabilityZone: view.Placement.AvailabilityZone,
		InstanceState:    view.State,
		InstanceStatus:   statusSummary(h.instanceImpaired),
		SystemStatus:     statusSummary(h.systemImpaired),
		Events:           append([]ec2types.InstanceStatusEvent(nil), h.events...),
	}
}

func statusSummary(impairedSince time.Time) *ec2types.InstanceStatusSummary {
	if impairedSince.IsZero() {
		return &ec2types.InstanceStatusSummary{Status: ec2types.SummaryStatusOk, Details: []ec2types.InstanceStatusDetails{
			{Name: ec2types.StatusNameReachability, Status: ec2types.StatusTypePassed},
		}}
	}
	return &ec2types.InstanceStatusSummary{Status: ec2types.SummaryStatusImpaired, Details: []ec2types.InstanceStatusDetails{
		{Name: ec2types.StatusNameReachability, Status: ec2types.StatusTypeFailed, ImpairedSince: aws.Time(impairedSince)},
	}}
}

func instanceStatusFields(s ec2types.InstanceStatus) filterFields {
	return func(name string) ([]string, bool) {
		switch name {
		case "instance-id":
			return []string{aws.ToString(s.InstanceId)}, true
		case "instance-state-name":
			return []string{string(s.InstanceState.Name)}, true
		case "availability-zone":
			return []string{aws.ToString(s.AvailabilityZone)}, true
		case "instance-status.status":
			return []string{string(s.InstanceStatus.Status)}, true
		case "instance-status.reachability":
			return []string{string(s.InstanceStatus.Details[0].Status)}, true
		case "system-status.status":
			return []string{string(s.SystemStatus.Status)}, true
		case "system-status.reachability":
			return []string{string(s.SystemStatus.Details[0].Status)}, true
		case "event.code":
			var codes []string
			for _, ev := range s.Events {
				codes = append(codes, string(ev.Code))
			}
			return codes, true
		}
		return nil, false
	}
}
