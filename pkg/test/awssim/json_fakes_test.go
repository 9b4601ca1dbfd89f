package awssim

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// queue is a minimal SQS queue with the SDK client's signatures, enough to
// carry messages through the wire with the checksums the SQS client
// verifies.
type queue struct {
	mu       sync.Mutex
	name     string
	url      string
	messages []sqstypes.Message
	next     int
}

func newQueue(name string) *queue {
	return &queue{name: name, url: "https://sqs.us-west-2.amazonaws.com/" + fake.AccountID + "/" + name}
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func (q *queue) GetQueueUrl(_ context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	if aws.ToString(in.QueueName) != q.name {
		// As fake.SQS answers: the query code comes from the SDK model.
		return nil, &sqstypes.QueueDoesNotExist{Message: aws.String("The specified queue does not exist.")}
	}
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String(q.url)}, nil
}

func (q *queue) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.next++
	id := fmt.Sprintf("msg-%d", q.next)
	body := aws.ToString(in.MessageBody)
	q.messages = append(q.messages, sqstypes.Message{MessageId: aws.String(id), ReceiptHandle: aws.String("rh-" + id), Body: aws.String(body), MD5OfBody: aws.String(md5Hex(body))})
	return &sqs.SendMessageOutput{MessageId: aws.String(id), MD5OfMessageBody: aws.String(md5Hex(body))}, nil
}

func (q *queue) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(int(max(in.MaxNumberOfMessages, 1)), len(q.messages))
	return &sqs.ReceiveMessageOutput{Messages: append([]sqstypes.Message(nil), q.messages[:n]...)}, nil
}

func (q *queue) DeleteMessage(_ context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, m := range q.messages {
		if aws.ToString(m.ReceiptHandle) == aws.ToString(in.ReceiptHandle) {
			q.messages = append(q.messages[:i], q.messages[i+1:]...)
			return &sqs.DeleteMessageOutput{}, nil
		}
	}
	return nil, &sqstypes.ReceiptHandleIsInvalid{Message: aws.String("The input receipt handle is invalid.")}
}

func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.messages)
}

// simulated is the JSON services of the simulated AWS on one listener.
type simulated struct {
	router  *Router
	url     string
	ssm     *fake.SSM
	pricing *fake.Pricing
	eks     *fake.EKS
	queue   *queue
}

// newSimulated serves the fakes, plus any extra handlers by service.
func newSimulated(t *testing.T, extra ...map[string]http.Handler) *simulated {
	t.Helper()
	s := &simulated{ssm: fake.NewSSM(), pricing: fake.NewPricing(), eks: fake.NewEKS(), queue: newQueue("karp-interruption")}
	handlers := map[string]http.Handler{
		"ssm":     NewJSONHandler("AmazonSSM", "1.1", s.ssm),
		"pricing": NewJSONHandler("AWSPriceListService", "1.1", s.pricing),
		"sqs":     NewJSONHandler("AmazonSQS", "1.0", s.queue),
		"eks":     NewEKSHandler(s.eks),
	}
	for _, m := range extra {
		for service, h := range m {
			handlers[service] = h
		}
	}
	s.router = NewRouter(handlers)
	s.url = listen(t, s.router)
	return s
}

func (s *simulated) config(retryer func() aws.Retryer) aws.Config {
	return clientConfig(s.url, retryer)
}

// TestSSMThroughTheWire checks the SSM fake behind the wire answers the
// SDK client as it answers a direct call: a parameter AWS published, a
// newer one replacing it, and ParameterNotFound for one it did not.
func TestSSMThroughTheWire(t *testing.T) {
	s := newSimulated(t)
	client := ssm.NewFromConfig(s.config(nil))
	const name = "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id"
	s.ssm.PutParameter(name, "ami-0000000000000001")
	s.ssm.PutParameter(name, "ami-0000000000000002")

	got, err := client.GetParameter(t.Context(), &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		t.Fatalf("GetParameter: %v", err)
	}
	want, err := s.ssm.GetParameter(t.Context(), &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Parameter, want.Parameter) {
		t.Errorf("GetParameter over the wire = %+v, direct = %+v", got.Parameter, want.Parameter)
	}
	if aws.ToString(got.Parameter.Value) != "ami-0000000000000002" || got.Parameter.Version != 2 {
		t.Errorf("parameter = %s v%d, want the republished ami-0000000000000002 v2", aws.ToString(got.Parameter.Value), got.Parameter.Version)
	}

	many, err := client.GetParameters(t.Context(), &ssm.GetParametersInput{Names: []string{name, "/missing"}})
	if err != nil {
		t.Fatalf("GetParameters: %v", err)
	}
	if len(many.Parameters) != 1 || !reflect.DeepEqual(many.InvalidParameters, []string{"/missing"}) {
		t.Errorf("GetParameters = %d parameters, invalid %v; want 1 and [/missing]", len(many.Parameters), many.InvalidParameters)
	}

	_, err = client.GetParameter(t.Context(), &ssm.GetParameterInput{Name: aws.String("/missing")})
	var notFound *ssmtypes.ParameterNotFound
	if !errors.As(err, &notFound) {
		t.Fatalf("GetParameter(/missing) error = %v, want *types.ParameterNotFound", err)
	}

	// A validation error keeps its code and message.
	_, err = client.GetParameters(t.Context(), &ssm.GetParametersInput{Names: []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"}})
	if code, msg := apiErrorCode(t, err); code != "ValidationException" || msg == "" || msg == code {
		t.Errorf("11 names: code %q message %q, want ValidationException with the fake's message", code, msg)
	}
	if got := s.ssm.Calls("GetParameter"); got != 3 {
		t.Errorf("fake GetParameter calls = %d, want 3 (2 over the wire + 1 direct)", got)
	}
}

// TestPricingPagesThroughTheWire checks GetProducts with filters and
// NextToken pagination through the SDK's paginator.
func TestPricingPagesThroughTheWire(t *testing.T) {
	s := newSimulated(t)
	for i := range 150 {
		s.pricing.SetOnDemandPrice("us-west-2", fmt.Sprintf("m9.size%d", i), 0.5+float64(i))
	}
	s.pricing.SetOnDemandPrice("eu-west-1", "m9.size0", 9)
	client := pricing.NewFromConfig(s.config(nil), func(o *pricing.Options) { o.Region = "us-east-1" })
	paginator := pricing.NewGetProductsPaginator(client, &pricing.GetProductsInput{
		ServiceCode: aws.String("AmazonEC2"),
		Filters: []pricingtypes.Filter{
			{Field: aws.String("regionCode"), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String("us-west-2")},
		},
	})
	var items, pages int
	for paginator.HasMorePages() {
		page, err := paginator.NextPage(t.Context())
		if err != nil {
			t.Fatalf("GetProducts page %d: %v", pages, err)
		}
		pages++
		items += len(page.PriceList)
		if aws.ToString(page.FormatVersion) != "aws_v1" {
			t.Errorf("FormatVersion = %q, want aws_v1", aws.ToString(page.FormatVersion))
		}
	}
	if items != 150 || pages != 2 {
		t.Errorf("GetProducts = %d items in %d pages, want 150 in 2", items, pages)
	}

	_, err := client.GetProducts(t.Context(), &pricing.GetProductsInput{ServiceCode: aws.String("")})
	if code, _ := apiErrorCode(t, err); code != "InvalidParameterException" {
		t.Errorf("empty ServiceCode: code %q, want InvalidParameterException", code)
	}
}

// TestEKSThroughTheWire checks DescribeCluster and its not-found error.
func TestEKSThroughTheWire(t *testing.T) {
	s := newSimulated(t)
	s.eks.PutCluster("karp-demo", "https://127.0.0.1:6443", "Q0EgYnVuZGxl")
	client := eks.NewFromConfig(s.config(nil))

	got, err := client.DescribeCluster(t.Context(), &eks.DescribeClusterInput{Name: aws.String("karp-demo")})
	if err != nil {
		t.Fatalf("DescribeCluster: %v", err)
	}
	want, _ := s.eks.DescribeCluster(t.Context(), &eks.DescribeClusterInput{Name: aws.String("karp-demo")})
	if !reflect.DeepEqual(got.Cluster, want.Cluster) {
		t.Errorf("DescribeCluster over the wire = %+v, direct = %+v", got.Cluster, want.Cluster)
	}

	_, err = client.DescribeCluster(t.Context(), &eks.DescribeClusterInput{Name: aws.String("other")})
	var notFound *ekstypes.ResourceNotFoundException
	if !errors.As(err, &notFound) || aws.ToString(notFound.Message) != "No cluster found for name: other." {
		t.Errorf("DescribeCluster(other) error = %v, want ResourceNotFoundException naming other", err)
	}
}

// TestSQSThroughTheWire sends, receives and deletes a message with the SQS
// client's checksum validation on, and checks the query-compatible error
// code of a missing queue.
func TestSQSThroughTheWire(t *testing.T) {
	s := newSimulated(t)
	client := sqs.NewFromConfig(s.config(nil))

	url, err := client.GetQueueUrl(t.Context(), &sqs.GetQueueUrlInput{QueueName: aws.String("karp-interruption")})
	if err != nil {
		t.Fatalf("GetQueueUrl: %v", err)
	}
	const body = `{"version":"0","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","detail":{"instance-id":"i-0123456789abcdef0","instance-action":"terminate"}}`
	if _, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: url.QueueUrl, MessageBody: aws.String(body)}); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	received, err := client.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: url.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	if err != nil {
		t.Fatalf("ReceiveMessage: %v", err)
	}
	if len(received.Messages) != 1 || aws.ToString(received.Messages[0].Body) != body {
		t.Fatalf("ReceiveMessage = %+v, want the one message sent", received.Messages)
	}
	if _, err := client.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: url.QueueUrl, ReceiptHandle: received.Messages[0].ReceiptHandle}); err != nil {
		t.Fatalf("DeleteMessage: %v", err)
	}
	if s.queue.len() != 0 {
		t.Errorf("queue holds %d messages after the delete, want 0", s.queue.len())
	}

	_, err = client.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: url.QueueUrl, ReceiptHandle: aws.String("rh-gone")})
	var invalid *sqstypes.ReceiptHandleIsInvalid
	if !errors.As(err, &invalid) {
		t.Errorf("DeleteMessage(rh-gone) error = %v, want ReceiptHandleIsInvalid", err)
	}

	_, err = client.GetQueueUrl(t.Context(), &sqs.GetQueueUrlInput{QueueName: aws.String("nope")})
	var missing *sqstypes.QueueDoesNotExist
	if !errors.As(err, &missing) {
		t.Fatalf("GetQueueUrl(nope) error = %v, want QueueDoesNotExist", err)
	}
	if code, _ := apiErrorCode(t, err); code != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Errorf("GetQueueUrl(nope) code = %q, want the query-compatible AWS.SimpleQueueService.NonExistentQueue", code)
	}
}
