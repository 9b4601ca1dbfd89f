package interruption_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/interruption"
)

var eventTime = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// Bodies shaped as EventBridge delivers the EC2 and AWS Health events to
// SQS (the examples of the EC2 and Health user guides).
const (
	spotWarning = `{"version":"0","id":"1e5527d7-bb36-4607-3370-4164db56a40e","detail-type":"EC2 Spot Instance Interruption Warning",
"source":"aws.ec2","account":"123456789012","time":"2030-01-01T00:00:00Z","region":"us-west-2",
"resources":["arn:aws:ec2:us-west-2:123456789012:instance/i-0b662ef9931388ba0"],
"detail":{"instance-id":"i-0b662ef9931388ba0","instance-action":"terminate"}}`
	rebalance = `{"version":"0","id":"2","detail-type":"EC2 Instance Rebalance Recommendation","source":"aws.ec2",
"time":"2030-01-01T00:00:00Z","detail":{"instance-id":"i-1"}}`
	stateChange = `{"version":"0","id":"3","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2",
"time":"2030-01-01T00:00:00Z","detail":{"instance-id":"i-1","state":"%s"}}`
	health = `{"version":"0","id":"4","detail-type":"AWS Health Event","source":"aws.health","time":"2030-01-01T00:00:00Z",
"detail":{"eventArn":"arn:aws:health:us-west-2::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/x","service":"%s",
"eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED","eventTypeCategory":"%s",
"affectedEntities":[{"entityValue":"i-1"},{"entityValue":"i-2"}]}}`
)

func TestParseMessage(t *testing.T) {
	for name, tc := range map[string]struct {
		body    string
		want    interruption.Message
		wantErr bool
	}{
		"spot interruption warning": {body: spotWarning, want: interruption.Message{
			Kind: interruption.KindSpotInterrupted, ID: "1e5527d7-bb36-4607-3370-4164db56a40e", Time: eventTime, InstanceIDs: []string{"i-0b662ef9931388ba0"}}},
		"rebalance recommendation": {body: rebalance, want: interruption.Message{
			Kind: interruption.KindRebalanceRecommendation, ID: "2", Time: eventTime, InstanceIDs: []string{"i-1"}}},
		"stopping": {body: fmt.Sprintf(stateChange, "stopping"), want: interruption.Message{
			Kind: interruption.KindInstanceStopped, ID: "3", Time: eventTime, InstanceIDs: []string{"i-1"}, State: "stopping"}},
		"stopped": {body: fmt.Sprintf(stateChange, "stopped"), want: interruption.Message{
			Kind: interruption.KindInstanceStopped, ID: "3", Time: eventTime, InstanceIDs: []string{"i-1"}, State: "stopped"}},
		"shutting-down": {body: fmt.Sprintf(stateChange, "shutting-down"), want: interruption.Message{
			Kind: interruption.KindInstanceTerminated, ID: "3", Time: eventTime, InstanceIDs: []string{"i-1"}, State: "shutting-down"}},
		"terminated": {body: fmt.Sprintf(stateChange, "terminated"), want: interruption.Message{
			Kind: interruption.KindInstanceTerminated, ID: "3", Time: eventTime, InstanceIDs: []string{"i-1"}, State: "terminated"}},
		"running is no action": {body: fmt.Sprintf(stateChange, "running"), want: interruption.Message{
			Kind: interruption.KindNoOp, ID: "3", Time: eventTime}},
		"scheduled change": {body: fmt.Sprintf(health, "EC2", "scheduledChange"), want: interruption.Message{
			Kind: interruption.KindScheduledChange, ID: "4", Time: eventTime, InstanceIDs: []string{"i-1", "i-2"}}},
		"health issue is no action": {body: fmt.Sprintf(health, "EC2", "issue"), want: interruption.Message{
			Kind: interruption.KindNoOp, ID: "4", Time: eventTime}},
		"another service's scheduled change is no action": {body: fmt.Sprintf(health, "RDS", "scheduledChange"), want: interruption.Message{
			Kind: interruption.KindNoOp, ID: "4", Time: eventTime}},
		"foreign event": {body: `{"version":"0","id":"5","detail-type":"Object Created","source":"aws.s3","time":"2030-01-01T00:00:00Z","detail":{"bucket":{}}}`,
			want: interruption.Message{Kind: interruption.KindNoOp, ID: "5", Time: eventTime}},
		"another envelope version": {body: `{"version":"1","id":"6","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","detail":{"instance-id":"i-1"}}`,
			want: interruption.Message{Kind: interruption.KindNoOp, ID: "6"}},
		"empty body":                  {body: "  ", want: interruption.Message{Kind: interruption.KindNoOp}},
		"not JSON":                    {body: "hello", wantErr: true},
		"truncated":                   {body: spotWarning[:80], wantErr: true},
		"bad time":                    {body: `{"version":"0","id":"7","source":"aws.ec2","time":"yesterday"}`, wantErr: true},
		"spot warning without detail": {body: `{"version":"0","id":"8","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2"}`, wantErr: true},
		"spot warning without instance": {body: `{"version":"0","id":"9","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","detail":{"instance-action":"terminate"}}`,
			wantErr: true},
		"detail of the wrong shape": {body: `{"version":"0","id":"10","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","detail":["i-1"]}`,
			wantErr: true},
		"scheduled change without entities": {body: `{"version":"0","id":"11","detail-type":"AWS Health Event","source":"aws.health","detail":{"service":"EC2","eventTypeCategory":"scheduledChange"}}`,
			wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := interruption.ParseMessage(tc.body)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestEventBodyParsesBack(t *testing.T) {
	for _, kind := range []interruption.Kind{
		interruption.KindSpotInterrupted, interruption.KindRebalanceRecommendation, interruption.KindScheduledChange,
		interruption.KindInstanceStopped, interruption.KindInstanceTerminated, interruption.KindCapacityReservationInterrupted,
	} {
		got, err := interruption.ParseMessage(interruption.EventBody(kind, "i-0abc", eventTime, "us-west-2"))
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if got.Kind != kind || !cmp.Equal(got.InstanceIDs, []string{"i-0abc"}) || !got.Time.Equal(eventTime) {
			t.Errorf("%s parsed back as %+v", kind, got)
		}
	}
	got, err := interruption.ParseMessage(interruption.EventBody(interruption.KindNoOp, "i-0abc", eventTime, "us-west-2"))
	if err != nil || got.Kind != interruption.KindNoOp {
		t.Errorf("a foreign event parsed as %+v, %v", got, err)
	}
}
