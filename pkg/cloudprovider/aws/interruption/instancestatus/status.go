package instancestatus

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/interruption"
)

// Category is a kind of status EC2 reports for an instance; its value is
// the category label of the unhealthy metric (upstream's values).
type Category string

// The categories acted on.
const (
	// CategoryInstanceStatus: the instance's own status check failed.
	CategoryInstanceStatus Category = "InstanceStatus"
	// CategorySystemStatus: the status check of the instance's host failed.
	CategorySystemStatus Category = "SystemStatus"
	// CategoryEventStatus: EC2 scheduled an event for the instance.
	CategoryEventStatus Category = "EventStatus"
)

// kinds is the interruption message kind each category is handled as.
var kinds = map[Category]interruption.Kind{
	CategoryInstanceStatus: interruption.KindInstanceStatus,
	CategorySystemStatus:   interruption.KindSystemStatus,
	CategoryEventStatus:    interruption.KindEventStatus,
}

// UnhealthyThreshold is how long a status check must have been failing
// before the instance is replaced (upstream's): a check that fails
// briefly, during a reboot for instance, recovers by itself.
const UnhealthyThreshold = 2 * time.Minute

// queries are the DescribeInstanceStatus filter sets asked in turn: EC2
// ANDs filters of different names, and an instance is unhealthy when any
// of these holds. EBS status checks are not asked for (upstream ignores
// them: a failed volume may be a pod's, not the node's).
var queries = [][]ec2types.Filter{
	{{Name: aws.String("instance-status.status"), Values: []string{string(ec2types.SummaryStatusImpaired)}}},
	{{Name: aws.String("system-status.status"), Values: []string{string(ec2types.SummaryStatusImpaired)}}},
	{{Name: aws.String("event.code"), Values: []string{
		string(ec2types.EventCodeInstanceReboot), string(ec2types.EventCodeSystemReboot),
		string(ec2types.EventCodeSystemMaintenance), string(ec2types.EventCodeInstanceRetirement),
		string(ec2types.EventCodeInstanceStop),
	}}},
}

// EC2API is the EC2 call the poll makes.
type EC2API interface {
	DescribeInstanceStatus(ctx context.Context, in *ec2.DescribeInstanceStatusInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceStatusOutput, error)
}

// Unhealthy is an instance to act on and the categories it is unhealthy
// in, in the order of the constants above.
type Unhealthy struct {
	InstanceID string
	Categories []Category
}

// describe returns the statuses of every instance that matches one of the
// queries, each instance once, following NextToken to the last page.
func describe(ctx context.Context, api EC2API) ([]ec2types.InstanceStatus, error) {
	seen := map[string]bool{}
	var out []ec2types.InstanceStatus
	for _, filters := range queries {
		pages := ec2.NewDescribeInstanceStatusPaginator(api, &ec2.DescribeInstanceStatusInput{Filters: filters})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing instance status: %w", err)
			}
			for _, s := range page.InstanceStatuses {
				if id := aws.ToString(s.InstanceId); id != "" && !seen[id] {
					seen[id] = true
					out = append(out, s)
				}
			}
		}
	}
	return out, nil
}

// Decide returns the instances among statuses to act on at now: a failed
// instance or system check impaired for at least UnhealthyThreshold (a
// check without its impaired-since time counts as failing long enough),
// or any scheduled event, whatever its time (upstream's stance: a host
// with an event should be vacated now, as for an AWS Health scheduled
// change).
func Decide(statuses []ec2types.InstanceStatus, now time.Time) []Unhealthy {
	var out []Unhealthy
	for _, s := range statuses {
		var categories []Category
		if failedLongEnough(s.InstanceStatus, now) {
			categories = append(categories, CategoryInstanceStatus)
		}
		if failedLongEnough(s.SystemStatus, now) {
			categories = append(categories, CategorySystemStatus)
		}
		if len(s.Events) > 0 {
			categories = append(categories, CategoryEventStatus)
		}
		if len(categories) > 0 {
			out = append(out, Unhealthy{InstanceID: aws.ToString(s.InstanceId), Categories: categories})
		}
	}
	return out
}

func failedLongEnough(summary *ec2types.InstanceStatusSummary, now time.Time) bool {
	if summary == nil {
		return false
	}
	return slices.ContainsFunc(summary.Details, func(d ec2types.InstanceStatusDetails) bool {
		return d.Status == ec2types.StatusTypeFailed && now.Sub(aws.ToTime(d.ImpairedSince)) >= UnhealthyThreshold
	})
}
