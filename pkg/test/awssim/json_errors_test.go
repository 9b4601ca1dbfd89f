package awssim

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/smithy-go"

	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// TestThrottleJSONServices checks each JSON service's throttling code
// reaches the SDK with retries off, that the standard retryer gets through
// after the throttles, and that throttled calls never reach the backend.
func TestThrottleJSONServices(t *testing.T) {
	s := newSimulated(t)
	s.ssm.PutParameter("/p", "v")
	s.eks.PutCluster("c", "https://127.0.0.1:6443", "")
	calls := map[string]struct {
		service, operation, wantCode string
		call                         func(ctx context.Context, cfg aws.Config) error
	}{
		"ssm": {"ssm", "GetParameter", "ThrottlingException", func(ctx context.Context, cfg aws.Config) error {
			_, err := ssm.NewFromConfig(cfg).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/p")})
			return err
		}},
		"sqs": {"sqs", "GetQueueUrl", "RequestThrottled", func(ctx context.Context, cfg aws.Config) error {
			_, err := sqs.NewFromConfig(cfg).GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("karp-interruption")})
			return err
		}},
		"pricing": {"pricing", "GetProducts", "ThrottlingException", func(ctx context.Context, cfg aws.Config) error {
			_, err := pricing.NewFromConfig(cfg, func(o *pricing.Options) { o.Region = "us-east-1" }).GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2")})
			return err
		}},
		"eks": {"eks", "DescribeCluster", "ThrottlingException", func(ctx context.Context, cfg aws.Config) error {
			_, err := eks.NewFromConfig(cfg).DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("c")})
			return err
		}},
	}
	for name, tc := range calls {
		t.Run(name, func(t *testing.T) {
			s.router.Throttle(tc.service, tc.operation, 1)
			err := tc.call(t.Context(), s.config(nil))
			if code, _ := apiErrorCode(t, err); code != tc.wantCode {
				t.Errorf("throttled %s.%s: code %q, want %q", tc.service, tc.operation, code, tc.wantCode)
			}
			if got := s.router.Calls(tc.service, tc.operation); got != 1 {
				t.Errorf("Calls = %d after one throttled call, want 1", got)
			}

			s.router.Throttle(tc.service, tc.operation, 2)
			if err := tc.call(t.Context(), s.config(fastRetryer(3))); err != nil {
				t.Errorf("standard retryer after 2 throttles: %v", err)
			}
			if got := s.router.Calls(tc.service, tc.operation); got != 4 {
				t.Errorf("Calls = %d, want 4 (1 + 2 throttled + 1 answered)", got)
			}
		})
	}
	// Only the answered calls reached the fakes.
	if got := s.ssm.Calls("GetParameter"); got != 1 {
		t.Errorf("fake SSM GetParameter calls = %d, want 1", got)
	}
	if got := s.eks.Calls("DescribeCluster"); got != 1 {
		t.Errorf("fake EKS DescribeCluster calls = %d, want 1", got)
	}
}

// TestBackendFaultsKeepTheirCodes checks faults injected into a fake reach
// the client with their code, and that a non-API error is a retryable 500.
func TestBackendFaultsKeepTheirCodes(t *testing.T) {
	s := newSimulated(t)
	s.ssm.PutParameter("/p", "v")
	client := ssm.NewFromConfig(s.config(nil))

	s.ssm.FailNext("GetParameter", 1, fake.APIError("AccessDeniedException", "User is not authorized to perform ssm:GetParameter"))
	_, err := client.GetParameter(t.Context(), &ssm.GetParameterInput{Name: aws.String("/p")})
	if code, msg := apiErrorCode(t, err); code != "AccessDeniedException" || msg != "User is not authorized to perform ssm:GetParameter" {
		t.Errorf("injected fault: code %q message %q", code, msg)
	}

	s.ssm.FailNext("GetParameter", 1, errors.New("disk on fire"))
	_, err = client.GetParameter(t.Context(), &ssm.GetParameterInput{Name: aws.String("/p")})
	code, msg := apiErrorCode(t, err)
	if code != "InternalFailure" || !strings.Contains(msg, "disk on fire") {
		t.Errorf("plain error: code %q message %q, want InternalFailure with the cause", code, msg)
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorFault() == smithy.FaultClient {
		t.Error("a plain backend error is reported as the client's fault")
	}

	// A 500 is retried by the standard retryer.
	s.ssm.FailNext("GetParameter", 1, errors.New("transient"))
	if _, err := ssm.NewFromConfig(s.config(fastRetryer(3))).GetParameter(t.Context(), &ssm.GetParameterInput{Name: aws.String("/p")}); err != nil {
		t.Errorf("standard retryer after one 500: %v", err)
	}
}

// TestHoldAfterChangesStateAndLosesTheAnswer holds an SQS DeleteMessage:
// the message is gone, the client only sees its own deadline.
func TestHoldAfterChangesStateAndLosesTheAnswer(t *testing.T) {
	s := newSimulated(t)
	client := sqs.NewFromConfig(s.config(nil))
	sent, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(s.queue.url), MessageBody: aws.String("m")})
	if err != nil {
		t.Fatal(err)
	}
	s.router.HoldAfter("sqs", "DeleteMessage", 1)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err = client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(s.queue.url), ReceiptHandle: aws.String("rh-" + aws.ToString(sent.MessageId))})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("held DeleteMessage: error %v, want the client's deadline", err)
	}
	if n := s.queue.len(); n != 0 {
		t.Errorf("queue holds %d messages, want 0: the held call ran on the backend", n)
	}
}

// TestBadRequests checks requests the SDK would never send are answered
// with errors naming the problem.
func TestBadRequests(t *testing.T) {
	s := newSimulated(t)
	const auth = "AWS4-HMAC-SHA256 Credential=AKID/20261125/us-west-2/%s/aws4_request, SignedHeaders=host, Signature=abc"
	for name, tc := range map[string]struct {
		service, method, path, target, body string
		wantStatus                          int
		wantInBody                          []string
	}{
		"unknown operation": {
			service: "ssm", method: http.MethodPost, target: "AmazonSSM.DeleteEverything", body: "{}",
			wantStatus: http.StatusBadRequest, wantInBody: []string{"UnknownOperationException", "DeleteEverything", "served: GetParameter, GetParameters"},
		},
		"helper method is not an operation": {
			service: "ssm", method: http.MethodPost, target: "AmazonSSM.PutParameter", body: "{}",
			wantStatus: http.StatusBadRequest, wantInBody: []string{"UnknownOperationException", "PutParameter"},
		},
		"wrong target prefix": {
			service: "ssm", method: http.MethodPost, target: "AmazonSQS.GetParameter", body: "{}",
			wantStatus: http.StatusBadRequest, wantInBody: []string{"UnknownOperationException", `\"AmazonSQS.GetParameter\" is not an operation of AmazonSSM`},
		},
		"malformed json": {
			service: "ssm", method: http.MethodPost, target: "AmazonSSM.GetParameter", body: `{"Name": `,
			wantStatus: http.StatusBadRequest, wantInBody: []string{"SerializationException", "malformed JSON body for AmazonSSM.GetParameter"},
		},
		"body not an object": {
			service: "sqs", method: http.MethodPost, target: "AmazonSQS.ReceiveMessage", body: `[1]`,
			wantStatus: http.StatusBadRequest, wantInBody: []string{"SerializationException", "must be a JSON object, got an array"},
		},
		"member of the wrong type": {
			service: "pricing", method: http.MethodPost, target: "AWSPriceListService.GetProducts", body: `{"ServiceCode":"AmazonEC2","Filters":[{"Field":7}]}`,
			wantStatus: http.StatusBadRequest, wantInBody: []string{"SerializationException", "Filters[0].Field: want a string, got a number"},
		},
		"integer overflow": {
			service: "sqs", method: http.MethodPost, target: "AmazonSQS.ReceiveMessage", body: `{"MaxNumberOfMessages":99999999999}`,
			wantStatus: http.StatusBadRequest, wantInBody: []string{"SerializationException", "MaxNumberOfMessages: 99999999999 is not a int32"},
		},
		"json service with GET": {
			service: "ssm", method: http.MethodGet, target: "AmazonSSM.GetParameter",
			wantStatus: http.StatusBadRequest, wantInBody: []string{"POST"},
		},
		"unknown eks path": {
			service: "eks", method: http.MethodGet, path: "/clusters/c/nodegroups",
			wantStatus: http.StatusNotFound, wantInBody: []string{"GET /clusters/c/nodegroups is not an EKS operation"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), tc.method, s.url+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", strings.Replace(auth, "%s", tc.service, 1))
			if tc.target != "" {
				req.Header.Set("X-Amz-Target", tc.target)
				req.Header.Set("Content-Type", "application/x-amz-json-1.1")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("status = %d, want %d (body %s)", resp.StatusCode, tc.wantStatus, body)
			}
			for _, want := range tc.wantInBody {
				if !strings.Contains(string(body), want) {
					t.Errorf("body %s does not contain %q", body, want)
				}
			}
		})
	}
}

// TestPanickingBackendIsAnError checks a backend panic is answered as an
// InternalFailure and the server keeps serving.
func TestPanickingBackendIsAnError(t *testing.T) {
	url := listen(t, NewRouter(map[string]http.Handler{"ssm": NewJSONHandler("AmazonSSM", "1.1", panicky{})}))
	client := ssm.NewFromConfig(clientConfig(url, nil))
	for range 2 {
		_, err := client.GetParameter(t.Context(), &ssm.GetParameterInput{Name: aws.String("/p")})
		if code, msg := apiErrorCode(t, err); code != "InternalFailure" || !strings.Contains(msg, "nil map") {
			t.Errorf("panicking backend: code %q message %q, want InternalFailure naming the panic", code, msg)
		}
	}
}

type panicky struct{}

func (panicky) GetParameter(context.Context, *ssm.GetParameterInput, ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	panic("assignment to entry in nil map")
}

func TestQueryErrorCode(t *testing.T) {
	for name, tc := range map[string]struct {
		err      smithy.APIError
		wantCode string
		wantOK   bool
	}{
		"sqs renamed":      {err: &sqstypes.QueueDoesNotExist{}, wantCode: "AWS.SimpleQueueService.NonExistentQueue", wantOK: true},
		"sqs same name":    {err: &sqstypes.ReceiptHandleIsInvalid{}, wantCode: "ReceiptHandleIsInvalid", wantOK: true},
		"ssm same name":    {err: &ssmtypes.ParameterNotFound{}, wantCode: "ParameterNotFound", wantOK: true},
		"generic has none": {err: &smithy.GenericAPIError{Code: "ThrottlingException"}},
		"eks not query":    {err: &ekstypes.ResourceNotFoundException{}},
	} {
		t.Run(name, func(t *testing.T) {
			code, ok := queryErrorCode(tc.err)
			if code != tc.wantCode || ok != tc.wantOK {
				t.Errorf("queryErrorCode(%T) = %q, %v; want %q, %v", tc.err, code, ok, tc.wantCode, tc.wantOK)
			}
		})
	}
}

// TestConcurrentCallsAreCounted checks the router under concurrent
// clients: every call is answered and counted once, throttles included.
func TestConcurrentCallsAreCounted(t *testing.T) {
	s := newSimulated(t)
	s.ssm.PutParameter("/p", "v")
	client := ssm.NewFromConfig(s.config(nil))
	s.router.Throttle("ssm", "GetParameter", 5)
	const callers = 20
	errs := make(chan error, callers)
	for range callers {
		go func() {
			_, err := client.GetParameter(t.Context(), &ssm.GetParameterInput{Name: aws.String("/p")})
			errs <- err
		}()
	}
	throttled := 0
	for range callers {
		if err := <-errs; err != nil {
			if code, _ := apiErrorCode(t, err); code != "ThrottlingException" {
				t.Errorf("unexpected error %v", err)
			}
			throttled++
		}
	}
	if throttled != 5 {
		t.Errorf("%d calls throttled, want 5", throttled)
	}
	if got := s.router.Calls("ssm", "GetParameter"); got != callers {
		t.Errorf("Calls = %d, want %d", got, callers)
	}
	if got := s.ssm.Calls("GetParameter"); got != callers-5 {
		t.Errorf("fake calls = %d, want %d", got, callers-5)
	}
}
