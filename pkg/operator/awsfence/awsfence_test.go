package awsfence_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karp-autoscaler/karp/pkg/operator/awsfence"
	"github.com/karp-autoscaler/karp/pkg/operator/fence"
	"github.com/karp-autoscaler/karp/pkg/test/awssim"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

const leasePath = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/karp"

// Through the SDK against the simulated EC2 and SQS, with the real fence:
// while a Lease renewal vouches for the replica its writes reach AWS; once
// the renewal is older than the renew deadline, writes (CreateTags,
// ReceiveMessage, DeleteQueue-like calls) fail before anything is sent,
// naming the lapse, and reads still go through.
func TestWritesStopWhenTheLeaseLapses(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	f := fence.New(clk, 10*time.Second, "kube-system", "karp")

	ec2Backend, sqsBackend := fake.NewEC2(), fake.NewSQS(clk)
	router := awssim.NewRouter(map[string]http.Handler{
		"ec2": awssim.NewEC2Handler(ec2Backend),
		"sqs": awssim.NewJSONHandler("AmazonSQS", "1.0", sqsBackend),
	})
	url, stop, err := awssim.Listen(router)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	cfg := aws.Config{
		Region: "us-west-2",
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDSIMULATED", SecretAccessKey: "secret"}, nil
		}),
		BaseEndpoint: aws.String(url),
		APIOptions:   []func(*middleware.Stack) error{awsfence.APIOption(f)},
	}
	ec2Client, sqsClient := ec2.NewFromConfig(cfg), sqs.NewFromConfig(cfg)
	ctx := t.Context()
	queue, err := sqsClient.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("karp")})
	if err == nil || !errors.Is(err, fence.ErrLeaseLapsed) {
		t.Fatalf("CreateQueue before any renewal: err %v, want the fence's refusal", err)
	}
	if n := router.Calls("sqs", "CreateQueue"); n != 0 {
		t.Fatalf("%d CreateQueue calls reached SQS before any renewal", n)
	}

	renew(t, f)
	if queue, err = sqsClient.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("karp")}); err != nil {
		t.Fatalf("CreateQueue while the Lease is held: %v", err)
	}
	tag := func() error {
		_, err := ec2Client.CreateTags(ctx, &ec2.CreateTagsInput{
			Resources: []string{"i-0123456789abcdef0"},
			Tags:      []ec2types.Tag{{Key: aws.String("karpenter.sh/nodeclaim"), Value: aws.String("default-abcde")}},
		})
		return err
	}
	receive := func() error {
		_, err := sqsClient.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: queue.QueueUrl})
		return err
	}
	// The simulated EC2 may answer CreateTags on an unknown instance with an
	// API error: what matters is that the call reached it.
	if err := tag(); errors.Is(err, fence.ErrLeaseLapsed) {
		t.Fatalf("CreateTags refused while the Lease is held: %v", err)
	}
	if err := receive(); err != nil {
		t.Fatalf("ReceiveMessage while the Lease is held: %v", err)
	}
	tags, receives := router.Calls("ec2", "CreateTags"), router.Calls("sqs", "ReceiveMessage")
	if tags == 0 || receives == 0 {
		t.Fatalf("calls reaching AWS while the Lease is held: CreateTags %d, ReceiveMessage %d", tags, receives)
	}

	clk.Step(11 * time.Second)
	for name, call := range map[string]func() error{"CreateTags": tag, "ReceiveMessage": receive} {
		err := call()
		if !errors.Is(err, fence.ErrLeaseLapsed) {
			t.Errorf("%s after the Lease lapsed: err %v, want the fence's refusal", name, err)
		} else if !strings.Contains(err.Error(), name) {
			t.Errorf("the refusal %q does not name the call %s", err, name)
		}
	}
	if n := router.Calls("ec2", "CreateTags"); n != tags {
		t.Errorf("CreateTags reached EC2 after the Lease lapsed (%d calls, %d before)", n, tags)
	}
	if n := router.Calls("sqs", "ReceiveMessage"); n != receives {
		t.Errorf("ReceiveMessage reached SQS after the Lease lapsed (%d calls, %d before)", n, receives)
	}
	if _, err := ec2Client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{}); err != nil {
		t.Errorf("DescribeInstances after the Lease lapsed: %v (reads must pass)", err)
	}
	if _, err := sqsClient.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: queue.QueueUrl}); err != nil {
		t.Errorf("GetQueueAttributes after the Lease lapsed: %v (reads must pass)", err)
	}

	renew(t, f)
	if err := receive(); err != nil {
		t.Errorf("ReceiveMessage after a new renewal: %v", err)
	}
}

func TestReadOnly(t *testing.T) {
	for op, want := range map[string]bool{
		"DescribeInstances": true, "DescribeLaunchTemplates": true, "GetParameter": true, "GetProducts": true,
		"ListInstanceProfiles": true, "GetQueueUrl": true, "DescribeCluster": true,
		"CreateFleet": false, "RunInstances": false, "TerminateInstances": false, "CreateTags": false,
		"DeleteLaunchTemplate": false, "DeleteInstanceProfile": false, "ReceiveMessage": false,
		"DeleteMessage": false, "": false,
	} {
		if got := awsfence.ReadOnly(op); got != want {
			t.Errorf("ReadOnly(%q) = %v, want %v", op, got, want)
		}
	}
}

// renew sends a Lease renewal through the fence, as the elector does.
func renew(t *testing.T, f *fence.Fence) {
	t.Helper()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer api.Close()
	body := `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"karp","namespace":"kube-system"},"spec":{"holderIdentity":"karp-0"}}`
	req, err := http.NewRequest(http.MethodPut, api.URL+leasePath, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.Wrap(http.DefaultTransport).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if !f.Holds() {
		t.Fatal("the fence does not hold after a renewal")
	}
}
