package awssim

import (
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// TestInterruptionMessagesAreEventBridgeEvents checks each kind is the
// EventBridge event its rule delivers, and lands in the queue.
func TestInterruptionMessagesAreEventBridgeEvents(t *testing.T) {
	ctx := t.Context()
	s := newTestSim(t)
	id, err := s.CreateLeakedInstance(ctx, "m5.large", "default", "default")
	if err != nil {
		t.Fatal(err)
	}
	for kind, want := range map[InterruptionKind]struct{ source, detailType, instanceField, state string }{
		SpotInterruption:        {"aws.ec2", "EC2 Spot Instance Interruption Warning", "instance-id", ""},
		RebalanceRecommendation: {"aws.ec2", "EC2 Instance Rebalance Recommendation", "instance-id", ""},
		ScheduledChange:         {"aws.health", "AWS Health Event", "", ""},
		StateTerminated:         {"aws.ec2", "EC2 Instance State-change Notification", "instance-id", "terminated"},
		StateStopping:           {"aws.ec2", "EC2 Instance State-change Notification", "instance-id", "stopping"},
	} {
		body, err := s.InterruptionMessage(kind, id)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Version    string         `json:"version"`
			Source     string         `json:"source"`
			DetailType string         `json:"detail-type"`
			Detail     map[string]any `json:"detail"`
		}
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if got.Version != "0" || got.Source != want.source || got.DetailType != want.detailType {
			t.Errorf("%s: version %q source %q detail-type %q", kind, got.Version, got.Source, got.DetailType)
		}
		if want.instanceField != "" && got.Detail[want.instanceField] != id {
			t.Errorf("%s: detail %v lacks %s=%s", kind, got.Detail, want.instanceField, id)
		}
		if got.Detail["state"] != nil && got.Detail["state"] != want.state || want.state != "" && got.Detail["state"] != want.state {
			t.Errorf("%s: state %v, want %q", kind, got.Detail["state"], want.state)
		}
		if kind == ScheduledChange {
			entities, _ := got.Detail["affectedEntities"].([]any)
			if got.Detail["service"] != "EC2" || got.Detail["eventTypeCategory"] != "scheduledChange" || len(entities) != 1 ||
				entities[0].(map[string]any)["entityValue"] != id {
				t.Errorf("scheduled change detail %v", got.Detail)
			}
		}
	}
	if _, err := s.InterruptionMessage("meteor_strike", id); err == nil {
		t.Error("an unknown kind produced a message")
	}

	if err := s.SendInterruption(ctx, SpotInterruption, id); err != nil {
		t.Fatal(err)
	}
	url, _ := s.SQS.Queue(s.QueueName())
	out, err := s.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("receiving from the interruption queue: %v, %v", out, err)
	}
	want, _ := s.InterruptionMessage(SpotInterruption, id)
	var a, b map[string]any
	_ = json.Unmarshal([]byte(aws.ToString(out.Messages[0].Body)), &a)
	_ = json.Unmarshal([]byte(want), &b)
	if a["detail-type"] != b["detail-type"] || a["source"] != b["source"] {
		t.Errorf("queued %v, want a spot interruption warning", a)
	}
}
