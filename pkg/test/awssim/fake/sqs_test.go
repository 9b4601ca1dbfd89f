package fake_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

func newQueue(t *testing.T, attributes map[string]string) (*fake.SQS, *clocktesting.FakeClock, string) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s := fake.NewSQS(clk)
	out, err := s.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String("karp"), Attributes: attributes})
	if err != nil {
		t.Fatal(err)
	}
	return s, clk, aws.ToString(out.QueueUrl)
}

func send(t *testing.T, s *fake.SQS, url string, bodies ...string) {
	t.Helper()
	for _, body := range bodies {
		if _, err := s.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
}

func receive(t *testing.T, s *fake.SQS, url string, n int32, visibility int32) []sqstypes.Message {
	t.Helper()
	out, err := s.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: n, VisibilityTimeout: visibility,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Messages
}

func bodies(msgs []sqstypes.Message) []string {
	out := []string{}
	for _, m := range msgs {
		out = append(out, aws.ToString(m.Body))
	}
	return out
}

func errorCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

func TestSQSQueues(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s := fake.NewSQS(clk)
	ctx := t.Context()

	_, err := s.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("karp")})
	var missing *sqstypes.QueueDoesNotExist
	if !errors.As(err, &missing) {
		t.Fatalf("GetQueueUrl of a missing queue: err = %v, want QueueDoesNotExist", err)
	}
	created, err := s.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("karp"), Attributes: map[string]string{"MessageRetentionPeriod": "300"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("karp")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(got.QueueUrl) != aws.ToString(created.QueueUrl) || aws.ToString(got.QueueUrl) != fake.SQSQueueURLPrefix+"karp" {
		t.Errorf("GetQueueUrl = %q, CreateQueue = %q", aws.ToString(got.QueueUrl), aws.ToString(created.QueueUrl))
	}
	if url, ok := s.Queue("karp"); !ok || url != aws.ToString(created.QueueUrl) {
		t.Errorf("Queue(karp) = %q, %v", url, ok)
	}
	if _, err := s.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("karp"), Attributes: map[string]string{"MessageRetentionPeriod": "300"}}); err != nil {
		t.Errorf("creating the same queue again: %v", err)
	}

	for name, tc := range map[string]struct {
		in       *sqs.CreateQueueInput
		wantCode string
	}{
		"different attributes": {&sqs.CreateQueueInput{QueueName: aws.String("karp"), Attributes: map[string]string{"MessageRetentionPeriod": "600"}}, "QueueNameExists"},
		"bad name":             {&sqs.CreateQueueInput{QueueName: aws.String("my queue")}, "InvalidParameterValue"},
		"empty name":           {&sqs.CreateQueueInput{}, "InvalidParameterValue"},
		"unknown attribute":    {&sqs.CreateQueueInput{QueueName: aws.String("q"), Attributes: map[string]string{"Colour": "red"}}, "InvalidAttributeName"},
		"attribute range":      {&sqs.CreateQueueInput{QueueName: aws.String("q"), Attributes: map[string]string{"VisibilityTimeout": "50000"}}, "InvalidAttributeValue"},
		"fifo":                 {&sqs.CreateQueueInput{QueueName: aws.String("q.fifo")}, "UnsupportedOperation"},
	} {
		_, err := s.CreateQueue(ctx, tc.in)
		if got := errorCode(err); got != tc.wantCode {
			t.Errorf("%s: error code %q (%v), want %q", name, got, err, tc.wantCode)
		}
	}
	if _, err := s.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("karp"), QueueOwnerAWSAccountId: aws.String("999999999999")}); !errors.As(err, &missing) {
		t.Errorf("another account's queue: err = %v, want QueueDoesNotExist", err)
	}

	if !s.DeleteQueue("karp") || s.DeleteQueue("karp") {
		t.Error("DeleteQueue should report the queue existed exactly once")
	}
	if _, err := s.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: created.QueueUrl, MessageBody: aws.String("x")}); !errors.As(err, &missing) {
		t.Errorf("sending to a deleted queue: err = %v, want QueueDoesNotExist", err)
	}
}

func TestSQSReceiveVisibilityAndDelete(t *testing.T) {
	s, clk, url := newQueue(t, nil)
	ctx := t.Context()
	var want []string
	for i := range 12 {
		want = append(want, fmt.Sprintf("m%02d", i))
	}
	send(t, s, url, want...)
	if got := s.Messages("karp"); got != (fake.QueueCounts{Visible: 12}) {
		t.Errorf("after sending: %+v", got)
	}

	first := receive(t, s, url, 10, 20)
	if diff := cmp.Diff(want[:10], bodies(first)); diff != "" {
		t.Errorf("first receive (-want,+got):\n%s", diff)
	}
	second := receive(t, s, url, 10, 20)
	if diff := cmp.Diff(want[10:], bodies(second)); diff != "" {
		t.Errorf("second receive (-want,+got):\n%s", diff)
	}
	if got := receive(t, s, url, 10, 20); len(got) != 0 {
		t.Errorf("in-flight messages received again: %v", bodies(got))
	}
	if got := s.Messages("karp"); got != (fake.QueueCounts{InFlight: 12}) {
		t.Errorf("after receiving: %+v", got)
	}
	m := first[0]
	if got := m.Attributes["ApproximateReceiveCount"]; got != "1" {
		t.Errorf("ApproximateReceiveCount = %q, want 1", got)
	}
	if got, want := m.Attributes["SentTimestamp"], fmt.Sprint(clk.Now().UnixMilli()); got != want {
		t.Errorf("SentTimestamp = %q, want %q", got, want)
	}
	// The checksum the SDK verifies: md5("m00").
	if got := aws.ToString(m.MD5OfBody); got != "9cfb6b7680d9f3c657d73243b3baf3de" {
		t.Errorf("MD5OfBody = %q", got)
	}

	// Deleting with the latest receipt handle deletes; a handle never
	// issued is refused.
	if _, err := s.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: first[1].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	_, err := s.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String("bogus")})
	var invalid *sqstypes.ReceiptHandleIsInvalid
	if !errors.As(err, &invalid) {
		t.Errorf("deleting with an unknown handle: err = %v, want ReceiptHandleIsInvalid", err)
	}

	// After the visibility timeout the other 11 come back with a new
	// handle and a higher receive count; the old handle no longer deletes.
	clk.Step(20 * time.Second)
	again := receive(t, s, url, 10, 20)
	if len(again) != 10 || aws.ToString(again[0].Body) != "m00" {
		t.Fatalf("after the visibility timeout got %v", bodies(again))
	}
	if got := again[0].Attributes["ApproximateReceiveCount"]; got != "2" {
		t.Errorf("ApproximateReceiveCount = %q, want 2", got)
	}
	if aws.ToString(again[0].ReceiptHandle) == aws.ToString(m.ReceiptHandle) {
		t.Error("a second receive returned the same receipt handle")
	}
	if _, err := s.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Errorf("a stale handle should be accepted: %v", err)
	}
	if got := s.Messages("karp"); got != (fake.QueueCounts{InFlight: 10, Visible: 1, Deleted: 1}) {
		t.Errorf("after a stale delete: %+v", got)
	}
	if _, err := s.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: again[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if got := s.Messages("karp"); got != (fake.QueueCounts{InFlight: 9, Visible: 1, Deleted: 2}) {
		t.Errorf("after deleting: %+v", got)
	}
}

func TestSQSReceiveLimitsAndAttributes(t *testing.T) {
	s, clk, url := newQueue(t, nil)
	ctx := t.Context()
	for name, in := range map[string]*sqs.ReceiveMessageInput{
		"too many messages": {QueueUrl: aws.String(url), MaxNumberOfMessages: 11},
		"too long a wait":   {QueueUrl: aws.String(url), WaitTimeSeconds: 21},
		"negative timeout":  {QueueUrl: aws.String(url), VisibilityTimeout: -1},
	} {
		if _, err := s.ReceiveMessage(ctx, in); errorCode(err) != "InvalidParameterValue" {
			t.Errorf("%s: err = %v, want InvalidParameterValue", name, err)
		}
	}
	if _, err := s.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(fake.SQSQueueURLPrefix + "other")}); errorCode(err) != "QueueDoesNotExist" {
		t.Errorf("unknown queue: err = %v", err)
	}

	if _, err := s.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("b"), MessageAttributes: map[string]sqstypes.MessageAttributeValue{
		"kind": {DataType: aws.String("String"), StringValue: aws.String("test")},
	}}); err != nil {
		t.Fatal(err)
	}
	// Without asking for attributes none come back; the default is one
	// message.
	out, err := s.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), VisibilityTimeout: 1})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive = %v, %v", out, err)
	}
	if out.Messages[0].Attributes != nil || out.Messages[0].MessageAttributes != nil {
		t.Errorf("attributes not asked for came back: %v %v", out.Messages[0].Attributes, out.Messages[0].MessageAttributes)
	}

	// The named ones come back, asked for by the deprecated field too.
	clk.Step(time.Second)
	out, err = s.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:              aws.String(url),
		AttributeNames:        []sqstypes.QueueAttributeName{"SentTimestamp"}, //nolint:staticcheck // the deprecated field clients still send
		MessageAttributeNames: []string{"kind"},
	})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive = %v, %v", out, err)
	}
	if got := out.Messages[0]; len(got.Attributes) != 1 || got.Attributes["SentTimestamp"] == "" || aws.ToString(got.MessageAttributes["kind"].StringValue) != "test" {
		t.Errorf("got attributes %v and message attributes %v, want SentTimestamp and kind", got.Attributes, got.MessageAttributes)
	}
}

func TestSQSLongPoll(t *testing.T) {
	s, clk, url := newQueue(t, nil)
	poll := func(ctx context.Context) chan []string {
		done := make(chan []string, 1)
		go func() {
			out, err := s.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 20, VisibilityTimeout: 5})
			if err != nil {
				done <- []string{"error: " + err.Error()}
				return
			}
			done <- bodies(out.Messages)
		}()
		return done
	}
	waitForPoller := func() {
		t.Helper()
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
	}

	// A poll returns when a message is sent...
	done := poll(t.Context())
	waitForPoller()
	send(t, s, url, "hello")
	if got := <-done; !cmp.Equal(got, []string{"hello"}) {
		t.Errorf("poll woken by a send got %v", got)
	}

	// ...when a received message becomes visible again...
	done = poll(t.Context())
	waitForPoller()
	clk.Step(5 * time.Second)
	if got := <-done; !cmp.Equal(got, []string{"hello"}) {
		t.Errorf("poll woken by a visibility timeout got %v", got)
	}

	// ...empty when the wait ends...
	clk.Step(5 * time.Second)
	if got := receive(t, s, url, 10, 600); len(got) != 1 { // hidden for longer than the wait
		t.Fatalf("got %v", bodies(got))
	}
	done = poll(t.Context())
	waitForPoller()
	clk.Step(20 * time.Second)
	if got := <-done; len(got) != 0 {
		t.Errorf("poll at the end of its wait got %v", got)
	}

	// ...and with the caller's error when its context ends.
	ctx, cancel := context.WithCancel(t.Context())
	done = poll(ctx)
	waitForPoller()
	cancel()
	if got := <-done; !cmp.Equal(got, []string{"error: " + context.Canceled.Error()}) {
		t.Errorf("cancelled poll got %v", got)
	}
}

func TestSQSDelayAndRetention(t *testing.T) {
	s, clk, url := newQueue(t, map[string]string{"MessageRetentionPeriod": "300", "DelaySeconds": "10"})
	send(t, s, url, "old")
	if got := s.Messages("karp"); got != (fake.QueueCounts{Delayed: 1}) {
		t.Errorf("delayed message: %+v", got)
	}
	if got := receive(t, s, url, 10, 30); len(got) != 0 {
		t.Errorf("a delayed message was received: %v", bodies(got))
	}
	clk.Step(10 * time.Second)
	if got := receive(t, s, url, 10, 30); !cmp.Equal(bodies(got), []string{"old"}) {
		t.Errorf("after the delay got %v", bodies(got))
	}
	clk.Step(290 * time.Second)
	if got := s.Messages("karp"); got != (fake.QueueCounts{}) {
		t.Errorf("a message past the retention period is kept: %+v", got)
	}
	out, err := s.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameMessageRetentionPeriod, sqstypes.QueueAttributeNameApproximateNumberOfMessages,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"MessageRetentionPeriod": "300", "ApproximateNumberOfMessages": "0"}, out.Attributes); diff != "" {
		t.Errorf("GetQueueAttributes (-want,+got):\n%s", diff)
	}
}

func TestSQSFaults(t *testing.T) {
	s, _, url := newQueue(t, nil)
	s.FailNext("ReceiveMessage", 1, fake.SQSThrottling())
	send(t, s, url, "kept")
	if _, err := s.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)}); errorCode(err) != "RequestThrottled" {
		t.Errorf("err = %v, want the injected throttling", err)
	}
	if got := receive(t, s, url, 1, 30); !cmp.Equal(bodies(got), []string{"kept"}) {
		t.Errorf("after the fault got %v", bodies(got))
	}
	if got := s.Calls("ReceiveMessage"); got != 2 {
		t.Errorf("Calls(ReceiveMessage) = %d, want 2", got)
	}
}
