package awssim

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	clocktesting "k8s.io/utils/clock/testing"
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

// TestSpotInstanceIsReclaimedAfterItsWarning: two minutes after a spot
// interruption warning EC2 takes a still-running instance back (it turns
// shutting-down, and the state-change notification reaches the queue);
// one already terminated by then is left alone, and Close cancels a
// pending reclaim.
func TestSpotInstanceIsReclaimedAfterItsWarning(t *testing.T) {
	ctx := t.Context()
	s := newTestSim(t)
	clk := s.opts.Clock.(*clocktesting.FakeClock)
	url, _ := s.SQS.Queue(s.QueueName())
	launch := func() string {
		t.Helper()
		id, err := s.CreateLeakedInstance(ctx, "m5.large", "default", "default")
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	state := func(id string) ec2types.InstanceStateName {
		inst, _ := s.Instance(id)
		return inst.State.Name
	}
	// drain returns the detail-type and state of every queued message.
	drain := func() []string {
		t.Helper()
		var got []string
		for {
			out, err := s.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Messages) == 0 {
				return got
			}
			for _, m := range out.Messages {
				var e struct {
					DetailType string            `json:"detail-type"`
					Detail     map[string]string `json:"detail"`
				}
				_ = json.Unmarshal([]byte(aws.ToString(m.Body)), &e)
				got = append(got, e.DetailType+" "+e.Detail["instance-id"]+" "+e.Detail["state"])
				if _, err := s.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}

	kept, terminated := launch(), launch()
	for _, id := range []string{kept, terminated} {
		if err := s.SendInterruption(ctx, SpotInterruption, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.EC2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{terminated}}); err != nil {
		t.Fatal(err)
	}
	if got := drain(); len(got) != 2 {
		t.Fatalf("queued %q, want the two warnings", got)
	}
	clk.Step(DefaultSpotReclaimDelay - time.Second)
	time.Sleep(100 * time.Millisecond) // a reclaim fired too early would have run by now
	if got := state(kept); got != ec2types.InstanceStateNameRunning {
		t.Fatalf("instance %s is %s a second before its reclaim, want running", kept, got)
	}
	if got := drain(); len(got) != 0 {
		t.Fatalf("queued %q before the reclaim", got)
	}

	clk.Step(time.Second)
	want := "EC2 Instance State-change Notification " + kept + " shutting-down"
	var got []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && len(got) == 0; time.Sleep(10 * time.Millisecond) {
		got = drain()
	}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("queued %q after the reclaim, want only %q", got, want)
	}
	if got := state(kept); got != ec2types.InstanceStateNameShuttingDown {
		t.Errorf("reclaimed instance %s is %s, want shutting-down", kept, got)
	}

	pending := launch()
	if err := s.SendInterruption(ctx, SpotInterruption, pending); err != nil {
		t.Fatal(err)
	}
	drain()
	s.Close()
	clk.Step(2 * DefaultSpotReclaimDelay)
	time.Sleep(100 * time.Millisecond)
	if got := state(pending); got != ec2types.InstanceStateNameRunning {
		t.Errorf("instance %s is %s after Close cancelled its reclaim, want running", pending, got)
	}
}
