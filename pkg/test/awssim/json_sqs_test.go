package awssim

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// TestFakeSQSThroughTheWire runs the interruption controller's SQS calls
// against fake.SQS behind the wire: a queue created and found by name, an
// EventBridge message with attributes sent and received with the client's
// MD5 checks on, a long poll woken by a message, a delete by receipt
// handle, and the query-compatible error codes.
func TestFakeSQSThroughTheWire(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	backend := fake.NewSQS(clk)
	router := NewRouter(map[string]http.Handler{"sqs": NewJSONHandler("AmazonSQS", "1.0", backend)})
	client := sqs.NewFromConfig(clientConfig(listen(t, router), nil))

	created, err := client.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String("karp-local"), Attributes: map[string]string{"MessageRetentionPeriod": "300"}})
	if err != nil {
		t.Fatalf("CreateQueue: %v", err)
	}
	found, err := client.GetQueueUrl(t.Context(), &sqs.GetQueueUrlInput{QueueName: aws.String("karp-local")})
	if err != nil {
		t.Fatalf("GetQueueUrl: %v", err)
	}
	if aws.ToString(found.QueueUrl) != aws.ToString(created.QueueUrl) {
		t.Fatalf("GetQueueUrl = %s, CreateQueue = %s", aws.ToString(found.QueueUrl), aws.ToString(created.QueueUrl))
	}
	queueURL := found.QueueUrl

	// A long poll that a message sent during it wakes.
	type received struct {
		out *sqs.ReceiveMessageOutput
		err error
	}
	polled := make(chan received, 1)
	go func() {
		out, err := client.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
			QueueUrl: queueURL, MaxNumberOfMessages: 10, WaitTimeSeconds: 20,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		polled <- received{out, err}
	}()
	const body = `{"version":"0","id":"1","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","region":"us-west-2","resources":["arn:aws:ec2:us-west-2:123456789012:instance/i-0123456789abcdef0"],"detail":{"instance-id":"i-0123456789abcdef0","instance-action":"terminate"}}`
	if _, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{
		QueueUrl: queueURL, MessageBody: aws.String(body),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			"source": {DataType: aws.String("String"), StringValue: aws.String("aws.ec2")},
			"raw":    {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, 255}},
		},
	}); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	got := <-polled
	if got.err != nil {
		t.Fatalf("ReceiveMessage: %v", got.err)
	}
	if len(got.out.Messages) != 1 {
		t.Fatalf("ReceiveMessage = %d messages, want 1", len(got.out.Messages))
	}
	msg := got.out.Messages[0]
	if aws.ToString(msg.Body) != body || string(msg.MessageAttributes["raw"].BinaryValue) != string([]byte{0, 1, 2, 255}) {
		t.Errorf("received body %q attributes %+v, want what was sent", aws.ToString(msg.Body), msg.MessageAttributes)
	}
	if counts := backend.Messages("karp-local"); counts.InFlight != 1 {
		t.Errorf("queue counts %+v, want the message in flight", counts)
	}

	if _, err := client.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: queueURL, ReceiptHandle: msg.ReceiptHandle}); err != nil {
		t.Fatalf("DeleteMessage: %v", err)
	}
	if counts := backend.Messages("karp-local"); counts.Deleted != 1 || counts.InFlight+counts.Visible != 0 {
		t.Errorf("queue counts %+v after the delete, want it deleted", counts)
	}

	_, err = client.GetQueueUrl(t.Context(), &sqs.GetQueueUrlInput{QueueName: aws.String("missing")})
	var missing *sqstypes.QueueDoesNotExist
	if !errors.As(err, &missing) {
		t.Fatalf("GetQueueUrl(missing) error = %v, want QueueDoesNotExist", err)
	}
	if code, _ := apiErrorCode(t, err); code != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Errorf("GetQueueUrl(missing) code = %q, want AWS.SimpleQueueService.NonExistentQueue", code)
	}

	// A long poll on an empty queue ends with its caller.
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: queueURL, WaitTimeSeconds: 20}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("empty long poll: error %v, want the caller's deadline", err)
	}
}
