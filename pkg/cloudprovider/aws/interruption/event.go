package interruption

import (
	"encoding/json"
	"fmt"
	"time"
)

// EventBody is the EventBridge event EC2 (or AWS Health) sends to the
// queue for kind about one instance at t, as a simulated cloud or a test
// sends it: a spot interruption warning, a rebalance recommendation, a
// state change to "stopping" (KindInstanceStopped) or "terminated"
// (KindInstanceTerminated), a scheduled instance retirement, or a capacity
// reservation interruption warning. Other kinds get an event of a source
// karp does not handle.
func EventBody(kind Kind, instanceID string, at time.Time, region string) string {
	source, detailType := "aws.ec2", ""
	var detail any = map[string]string{"instance-id": instanceID}
	switch kind {
	case KindSpotInterrupted:
		detailType = "EC2 Spot Instance Interruption Warning"
		detail = map[string]string{"instance-id": instanceID, "instance-action": "terminate"}
	case KindRebalanceRecommendation:
		detailType = "EC2 Instance Rebalance Recommendation"
	case KindCapacityReservationInterrupted:
		detailType = "EC2 Capacity Reservation Instance Interruption Warning"
	case KindInstanceStopped:
		detailType = "EC2 Instance State-change Notification"
		detail = map[string]string{"instance-id": instanceID, "state": "stopping"}
	case KindInstanceTerminated:
		detailType = "EC2 Instance State-change Notification"
		detail = map[string]string{"instance-id": instanceID, "state": "terminated"}
	case KindScheduledChange:
		source, detailType = "aws.health", "AWS Health Event"
		detail = map[string]any{
			"eventArn":          fmt.Sprintf("arn:aws:health:%s::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/%s", region, instanceID),
			"service":           "EC2",
			"eventTypeCode":     "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
			"eventTypeCategory": "scheduledChange",
			"startTime":         at.Add(14 * 24 * time.Hour).UTC().Format(time.RFC1123),
			"affectedEntities":  []map[string]string{{"entityValue": instanceID}},
		}
	default:
		source, detailType = "aws.autoscaling", "EC2 Instance Launch Successful"
	}
	body, err := json.Marshal(map[string]any{
		"version":     "0",
		"id":          fmt.Sprintf("%s-%s-%d", kind, instanceID, at.UnixNano()),
		"detail-type": detailType,
		"source":      source,
		"account":     "123456789012",
		"time":        at.UTC().Format(time.RFC3339),
		"region":      region,
		"resources":   []string{fmt.Sprintf("arn:aws:ec2:%s:123456789012:instance/%s", region, instanceID)},
		"detail":      detail,
	})
	if err != nil {
		panic(fmt.Sprintf("encoding an EventBridge event: %v", err)) // maps of strings always encode
	}
	return string(body)
}
