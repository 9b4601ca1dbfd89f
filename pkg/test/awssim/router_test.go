package awssim

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/smithy-go"
)

// listen serves h for the duration of the test.
func listen(t *testing.T, h http.Handler) string {
	t.Helper()
	url, stop, err := Listen(h)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(stop)
	return url
}

// clientConfig is an SDK config pointed at url with static credentials and
// the given retryer (nil: no retries).
func clientConfig(url string, retryer func() aws.Retryer) aws.Config {
	if retryer == nil {
		retryer = func() aws.Retryer { return aws.NopRetryer{} }
	}
	return aws.Config{
		Region:       "us-west-2",
		BaseEndpoint: aws.String(url),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDSIMULATED", SecretAccessKey: "secret", Source: "test"}, nil
		}),
		Retryer: retryer,
	}
}

// fastRetryer is the SDK's standard retryer with its backoff shortened so
// tests do not wait seconds between attempts.
func fastRetryer(maxAttempts int) func() aws.Retryer {
	return func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = maxAttempts
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
		})
	}
}

func apiErrorCode(t *testing.T, err error) (string, string) {
	t.Helper()
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %v (%T) is not a smithy.APIError", err, err)
	}
	return apiErr.ErrorCode(), apiErr.ErrorMessage()
}

func TestSigningService(t *testing.T) {
	for name, tc := range map[string]struct {
		header      string
		wantService string
		wantOK      bool
	}{
		"sdk header": {
			header:      "AWS4-HMAC-SHA256 Credential=AKID/20261125/us-west-2/ec2/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc",
			wantService: "ec2", wantOK: true,
		},
		"no credential":     {header: "Bearer token"},
		"empty":             {header: ""},
		"short scope":       {header: "AWS4-HMAC-SHA256 Credential=AKID/20261125/us-west-2/aws4_request, Signature=abc"},
		"wrong terminator":  {header: "AWS4-HMAC-SHA256 Credential=AKID/20261125/us-west-2/ssm/aws5_request, Signature=abc"},
		"empty service":     {header: "AWS4-HMAC-SHA256 Credential=AKID/20261125/us-west-2//aws4_request, Signature=abc"},
		"credential at end": {header: "AWS4-HMAC-SHA256 Credential=AKID/20261125/us-east-1/pricing/aws4_request", wantService: "pricing", wantOK: true},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := signingService(tc.header)
			if got != tc.wantService || ok != tc.wantOK {
				t.Errorf("signingService(%q) = %q, %v; want %q, %v", tc.header, got, ok, tc.wantService, tc.wantOK)
			}
		})
	}
}

func TestRouterRejectsUnroutableRequests(t *testing.T) {
	url := listen(t, NewRouter(map[string]http.Handler{"ssm": http.NotFoundHandler(), "ec2": http.NotFoundHandler()}))
	for name, tc := range map[string]struct {
		authorization string
		wantStatus    int
		wantInBody    []string
	}{
		"no authorization": {
			wantStatus: http.StatusBadRequest,
			wantInBody: []string{"MissingAuthenticationTokenException", "Authorization header"},
		},
		"unknown service": {
			authorization: "AWS4-HMAC-SHA256 Credential=AKID/20261125/us-west-2/dynamodb/aws4_request, Signature=abc",
			wantStatus:    http.StatusNotFound,
			wantInBody:    []string{"UnknownServiceException", "dynamodb", "served: ec2, ssm"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			if tc.authorization != "" {
				req.Header.Set("Authorization", tc.authorization)
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
					t.Errorf("body %s does not name %q", body, want)
				}
			}
		})
	}
}

// TestThrottleQueryProtocols checks the router's own throttling envelopes
// for the XML services through the real EC2 and IAM clients: the backend is
// never reached, the SDK reports the service's throttling code, and the
// standard retryer retries it.
func TestThrottleQueryProtocols(t *testing.T) {
	var reached atomic.Int32
	unreachable := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	})
	router := NewRouter(map[string]http.Handler{"ec2": unreachable, "iam": unreachable})
	url := listen(t, router)

	router.Throttle("ec2", "DescribeInstances", 1)
	_, err := ec2.NewFromConfig(clientConfig(url, nil)).DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{})
	if code, msg := apiErrorCode(t, err); code != "RequestLimitExceeded" || !strings.Contains(msg, "ec2.DescribeInstances") {
		t.Errorf("ec2 throttle: code %q message %q, want RequestLimitExceeded naming ec2.DescribeInstances", code, msg)
	}

	router.Throttle("iam", "GetInstanceProfile", 1)
	_, err = iam.NewFromConfig(clientConfig(url, nil)).GetInstanceProfile(t.Context(), &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("p")})
	if code, _ := apiErrorCode(t, err); code != "Throttling" {
		t.Errorf("iam throttle: code %q, want Throttling", code)
	}
	if reached.Load() != 0 {
		t.Errorf("throttled calls reached the backend %d times", reached.Load())
	}

	// With the standard retryer, two throttles then the backend's answer:
	// three attempts, the third reaching the backend.
	router.Throttle("iam", "GetInstanceProfile", 2)
	_, err = iam.NewFromConfig(clientConfig(url, fastRetryer(3))).GetInstanceProfile(t.Context(), &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("p")})
	if err == nil {
		t.Fatal("want the backend's 500 after the throttles, got success")
	}
	if got := router.Calls("iam", "GetInstanceProfile"); got != 4 {
		t.Errorf("Calls(iam, GetInstanceProfile) = %d, want 4 (1 + 2 throttled + 1 through)", got)
	}
	// Two invocations of the operation: the retries are not counted again.
	if got := router.Invocations("iam", "GetInstanceProfile"); got != 2 {
		t.Errorf("Invocations(iam, GetInstanceProfile) = %d, want 2 (the retried call counted once)", got)
	}
	if got := router.Calls("ec2", "DescribeInstances"); got != 1 {
		t.Errorf("Calls(ec2, DescribeInstances) = %d, want 1", got)
	}
	if reached.Load() == 0 {
		t.Error("the retried call never reached the backend")
	}
}

// TestHoldAfter checks that a held call runs on the backend and that its
// client sees only its own timeout; the next call is answered.
func TestHoldAfter(t *testing.T) {
	var ran atomic.Int32
	backend := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		ran.Add(1)
		w.Header().Set("Content-Type", "text/xml")
		_, _ = io.WriteString(w, `<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r</requestId><reservationSet/></DescribeInstancesResponse>`)
	})
	router := NewRouter(map[string]http.Handler{"ec2": backend})
	client := ec2.NewFromConfig(clientConfig(listen(t, router), nil))

	router.HoldAfter("ec2", "DescribeInstances", 1)
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	_, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("held call: error %v, want the client's deadline", err)
	}
	if ran.Load() != 1 {
		t.Fatalf("held call ran on the backend %d times, want 1", ran.Load())
	}
	if _, err := client.DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{}); err != nil {
		t.Fatalf("call after the hold: %v", err)
	}
	if ran.Load() != 2 {
		t.Errorf("backend ran %d times, want 2", ran.Load())
	}
}

// TestAnyOperation checks a fault queued for every operation of a service
// hits whichever operation comes next, after faults queued for the exact
// operation, and leaves other services alone.
func TestAnyOperation(t *testing.T) {
	var reached atomic.Int32
	backend := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached.Add(1)
		w.WriteHeader(http.StatusNotImplemented)
	})
	router := NewRouter(map[string]http.Handler{"ec2": backend, "iam": backend})
	cfg := clientConfig(listen(t, router), nil)
	ec2Client, iamClient := ec2.NewFromConfig(cfg), iam.NewFromConfig(cfg)

	router.Throttle("ec2", AnyOperation, 2)
	router.HoldAfter("ec2", AnyOperation, 1)
	_, err := ec2Client.DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{})
	if code, _ := apiErrorCode(t, err); code != "RequestLimitExceeded" {
		t.Errorf("DescribeInstances: code %q, want RequestLimitExceeded", code)
	}
	_, err = ec2Client.DescribeSubnets(t.Context(), &ec2.DescribeSubnetsInput{})
	if code, _ := apiErrorCode(t, err); code != "RequestLimitExceeded" {
		t.Errorf("DescribeSubnets: code %q, want RequestLimitExceeded", code)
	}
	// IAM is not throttled.
	_, _ = iamClient.GetInstanceProfile(t.Context(), &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("p")})
	if reached.Load() != 1 {
		t.Fatalf("backend reached %d times, want once (by IAM)", reached.Load())
	}
	// The throttles are spent; the hold is next.
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := ec2Client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{"i-1"}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("held TerminateInstances: error %v, want the client's deadline", err)
	}
	if reached.Load() != 2 {
		t.Errorf("backend reached %d times, want 2 (the held call ran)", reached.Load())
	}
	for op, want := range map[string]int{"DescribeInstances": 1, "DescribeSubnets": 1, "TerminateInstances": 1, AnyOperation: 0} {
		if got := router.Calls("ec2", op); got != want {
			t.Errorf("Calls(ec2, %s) = %d, want %d", op, got, want)
		}
	}
}
