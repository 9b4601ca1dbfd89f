package awssim

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/smithy-go"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/sdkhttp"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/instancetypes"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// zones are the zones the catalog is offered in (any two will do).
var zones = []fake.OfferingZone{{Name: "us-west-2a", ID: "usw2-az1"}, {Name: "us-west-2b", ID: "usw2-az2"}}

// noBackoff retries at once: the tests assert what is retried, not when.
func noBackoff(o *retry.StandardOptions) {
	o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
}

// noRetries fails on the first error of any kind. The clients send through
// sdkhttp's client, so a large response is never lost to a dropped
// connection on loopback.
func noRetries() aws.Retryer { return aws.NopRetryer{} }

func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func ec2Client(endpoint string, retryer aws.Retryer) *ec2.Client {
	return ec2.New(ec2.Options{
		BaseEndpoint: aws.String(endpoint),
		Region:       "us-west-2",
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		Retryer:      retryer,
		HTTPClient:   sdkhttp.NewClient(),
	})
}

func iamClient(endpoint string, retryer aws.Retryer) *iam.Client {
	return iam.New(iam.Options{
		BaseEndpoint: aws.String(endpoint),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		Retryer:      retryer,
		HTTPClient:   sdkhttp.NewClient(),
	})
}

// TestEC2PaginatesTheCatalog pages DescribeInstanceTypes over the whole
// seeded catalog through the SDK paginator: every type arrives exactly once.
func TestEC2PaginatesTheCatalog(t *testing.T) {
	infos, err := fake.CatalogInstanceTypes(instancetypes.EC2)
	if err != nil {
		t.Fatal(err)
	}
	backend := fake.NewEC2()
	backend.SeedCatalog(infos, zones...)
	client := ec2Client(serve(t, NewEC2Handler(backend)), noRetries())

	seen := map[ec2types.InstanceType]int{}
	pages := ec2.NewDescribeInstanceTypesPaginator(client, &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(100)})
	pagesSeen := 0
	for pages.HasMorePages() {
		pagesSeen++
		page, err := pages.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.InstanceTypes {
			seen[it.InstanceType]++
		}
	}
	if len(seen) != len(infos) {
		t.Errorf("got %d distinct instance types, want %d", len(seen), len(infos))
	}
	for it, n := range seen {
		if n != 1 {
			t.Errorf("%s arrived %d times", it, n)
		}
	}
	if want := (len(infos) + 99) / 100; pagesSeen != want || backend.Calls("DescribeInstanceTypes") != want {
		t.Errorf("got %d pages in %d calls, want %d", pagesSeen, backend.Calls("DescribeInstanceTypes"), want)
	}
}

// TestEC2FiltersReachTheBackend sends tag filters (Filter.N.Name /
// Filter.N.Value.M on the wire) and gets back only the matching subnet.
func TestEC2FiltersReachTheBackend(t *testing.T) {
	backend := fake.NewEC2()
	backend.AddSubnets(
		ec2types.Subnet{SubnetId: aws.String("subnet-a"), AvailabilityZone: aws.String("us-west-2a"), AvailableIpAddressCount: aws.Int32(10),
			Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/discovery"), Value: aws.String("my-cluster")}}},
		ec2types.Subnet{SubnetId: aws.String("subnet-b"), AvailabilityZone: aws.String("us-west-2b"), AvailableIpAddressCount: aws.Int32(10),
			Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/discovery"), Value: aws.String("other")}}},
	)
	client := ec2Client(serve(t, NewEC2Handler(backend)), noRetries())
	out, err := client.DescribeSubnets(t.Context(), &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:karpenter.sh/discovery"), Values: []string{"my-cluster", "not-there"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Subnets) != 1 || aws.ToString(out.Subnets[0].SubnetId) != "subnet-a" {
		t.Fatalf("got subnets %v, want only subnet-a", out.Subnets)
	}
	if got := aws.ToString(out.Subnets[0].Tags[0].Value); got != "my-cluster" {
		t.Errorf("got tag value %q, want my-cluster", got)
	}
}

// TestEC2ErrorsKeepCodeAndMessage: an API error of the backend arrives as the
// same code and message, with EC2's HTTP status; anything else is InternalError.
func TestEC2ErrorsKeepCodeAndMessage(t *testing.T) {
	tests := map[string]struct {
		err         error
		wantCode    string
		wantMessage string
		wantStatus  int
	}{
		"client error": {
			err:         &smithy.GenericAPIError{Code: "InvalidSubnetID.NotFound", Message: "The subnet ID 'subnet-x' does not exist", Fault: smithy.FaultClient},
			wantCode:    "InvalidSubnetID.NotFound",
			wantMessage: "The subnet ID 'subnet-x' does not exist",
			wantStatus:  http.StatusBadRequest,
		},
		"throttling": {
			err:         fake.Throttling("DescribeSubnets"),
			wantCode:    "RequestLimitExceeded",
			wantMessage: "DescribeSubnets: Request limit exceeded.",
			wantStatus:  http.StatusServiceUnavailable,
		},
		"server fault": {
			err:         &smithy.GenericAPIError{Code: "Unavailable", Message: "The service is unavailable.", Fault: smithy.FaultServer},
			wantCode:    "Unavailable",
			wantMessage: "The service is unavailable.",
			wantStatus:  http.StatusServiceUnavailable,
		},
		"dry run": {
			err:         fake.APIError("DryRunOperation", "Request would have succeeded, but DryRun flag is set."),
			wantCode:    "DryRunOperation",
			wantMessage: "Request would have succeeded, but DryRun flag is set.",
			wantStatus:  http.StatusPreconditionFailed,
		},
		"not an API error": {
			err:         errors.New("disk on fire <&>"),
			wantCode:    "InternalError",
			wantMessage: "disk on fire <&>",
			wantStatus:  http.StatusInternalServerError,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			backend := fake.NewEC2()
			backend.FailNext("DescribeSubnets", 1, tc.err)
			client := ec2Client(serve(t, NewEC2Handler(backend)), noRetries())
			_, err := client.DescribeSubnets(t.Context(), &ec2.DescribeSubnetsInput{})
			var api smithy.APIError
			if !errors.As(err, &api) {
				t.Fatalf("got %v, want an API error", err)
			}
			if api.ErrorCode() != tc.wantCode || api.ErrorMessage() != tc.wantMessage {
				t.Errorf("got %s: %q, want %s: %q", api.ErrorCode(), api.ErrorMessage(), tc.wantCode, tc.wantMessage)
			}
			var resp *awshttp.ResponseError
			if !errors.As(err, &resp) || resp.HTTPStatusCode() != tc.wantStatus {
				t.Fatalf("got %v, want HTTP status %d", err, tc.wantStatus)
			}
			if resp.ServiceRequestID() == "" {
				t.Errorf("got no request ID with %v", err)
			}
		})
	}
}

// TestEC2ThrottlingIsRetried: with the SDK's standard retryer a throttled
// call is retried and succeeds; the backend sees every attempt.
func TestEC2ThrottlingIsRetried(t *testing.T) {
	backend := fake.NewEC2()
	backend.AddSubnets(ec2types.Subnet{SubnetId: aws.String("subnet-a"), AvailabilityZone: aws.String("us-west-2a")})
	backend.FailNext("DescribeSubnets", 2, fake.Throttling("DescribeSubnets"))
	client := ec2Client(serve(t, NewEC2Handler(backend)), retry.NewStandard(noBackoff, func(o *retry.StandardOptions) { o.RateLimiter = ratelimit.None }))
	out, err := client.DescribeSubnets(t.Context(), &ec2.DescribeSubnetsInput{})
	if err != nil {
		t.Fatalf("got %v, want the third attempt to succeed", err)
	}
	if len(out.Subnets) != 1 {
		t.Errorf("got %d subnets, want 1", len(out.Subnets))
	}
	if got := backend.Calls("DescribeSubnets"); got != 3 {
		t.Errorf("got %d calls, want 3 (two throttled, one served)", got)
	}
}

// TestIAMErrors: IAM's modelled errors arrive as the SDK's typed errors, and
// its throttling is retried.
func TestIAMErrors(t *testing.T) {
	backend := fake.NewIAM()
	backend.AddRole("KarpenterNodeRole")
	backend.AddInstanceProfile("profile-a", "KarpenterNodeRole")
	endpoint := serve(t, NewIAMHandler(backend))

	_, err := iamClient(endpoint, noRetries()).GetInstanceProfile(t.Context(), &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("missing")})
	var notFound *iamtypes.NoSuchEntityException
	if !errors.As(err, &notFound) {
		t.Fatalf("got %v, want NoSuchEntityException", err)
	}
	if want := "Instance Profile missing cannot be found."; notFound.ErrorMessage() != want {
		t.Errorf("got message %q, want %q", notFound.ErrorMessage(), want)
	}
	var resp *awshttp.ResponseError
	if !errors.As(err, &resp) || resp.HTTPStatusCode() != http.StatusNotFound {
		t.Errorf("got %v, want HTTP status 404", err)
	}

	backend.FailNext("GetInstanceProfile", 1, &smithy.GenericAPIError{Code: "Throttling", Message: "Rate exceeded"})
	out, err := iamClient(endpoint, retry.NewStandard(noBackoff, func(o *retry.StandardOptions) { o.RateLimiter = ratelimit.None })).GetInstanceProfile(t.Context(), &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("profile-a")})
	if err != nil {
		t.Fatalf("got %v, want the retry to succeed", err)
	}
	if got := aws.ToString(out.InstanceProfile.Roles[0].RoleName); got != "KarpenterNodeRole" {
		t.Errorf("got role %q, want KarpenterNodeRole", got)
	}
}

// TestMalformedRequests: bad input is a 4xx error naming what is wrong,
// never a panic or a 5xx.
func TestMalformedRequests(t *testing.T) {
	tests := map[string]struct {
		handler  http.Handler
		method   string
		body     string
		wantCode string
		wantText string
	}{
		"unknown action": {
			handler: NewEC2Handler(fake.NewEC2()), body: "Action=LaunchRockets&Version=2016-11-15",
			wantCode: "InvalidAction", wantText: "LaunchRockets",
		},
		"a helper method is not an action": {
			handler: NewEC2Handler(fake.NewEC2()), body: "Action=Instances&Version=2016-11-15",
			wantCode: "InvalidAction", wantText: "Instances",
		},
		"no action": {
			handler: NewEC2Handler(fake.NewEC2()), body: "Version=2016-11-15",
			wantCode: "MissingAction",
		},
		"unknown parameter": {
			handler: NewEC2Handler(fake.NewEC2()), body: "Action=DescribeSubnets&Version=2016-11-15&Filter.1.Name=x&Filter.1.Colour=red",
			wantCode: "UnknownParameter", wantText: "Filter.1.Colour",
		},
		"a Go field name is not a query key": {
			handler: NewEC2Handler(fake.NewEC2()), body: "Action=DescribeInstances&Version=2016-11-15&InstanceIds.1=i-1",
			wantCode: "UnknownParameter", wantText: "InstanceIds.1",
		},
		"not a number": {
			handler: NewEC2Handler(fake.NewEC2()), body: "Action=DescribeInstanceTypes&Version=2016-11-15&MaxResults=many",
			wantCode: "InvalidParameterValue", wantText: "MaxResults",
		},
		"not a time": {
			handler: NewEC2Handler(fake.NewEC2()), body: "Action=DescribeSpotPriceHistory&Version=2016-11-15&StartTime=yesterday",
			wantCode: "InvalidParameterValue", wantText: "StartTime",
		},
		"repeated scalar": {
			handler: NewEC2Handler(fake.NewEC2()), body: "Action=DescribeInstances&Version=2016-11-15&MaxResults=5&MaxResults=6",
			wantCode: "InvalidParameterValue", wantText: "MaxResults",
		},
		"broken form": {
			handler: NewEC2Handler(fake.NewEC2()), body: "Action=DescribeInstances&%zz",
			wantCode: "MalformedQueryString",
		},
		"GET": {
			handler: NewEC2Handler(fake.NewEC2()), method: http.MethodGet,
			wantCode: "MalformedQueryString", wantText: "GET",
		},
		"IAM unknown action": {
			handler: NewIAMHandler(fake.NewIAM()), body: "Action=CreateUser&Version=2010-05-08&UserName=x",
			wantCode: "InvalidAction", wantText: "CreateUser",
		},
		"IAM list without member": {
			handler: NewIAMHandler(fake.NewIAM()), body: "Action=GetInstanceProfile&Version=2010-05-08&InstanceProfileName=p&Tags.1.Key=k",
			wantCode: "UnknownParameter", wantText: "Tags.1.Key",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			req := httptest.NewRequest(method, "/", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			rec := httptest.NewRecorder()
			tc.handler.ServeHTTP(rec, req)
			body, _ := io.ReadAll(rec.Body)
			if rec.Code < 400 || rec.Code >= 500 {
				t.Errorf("got HTTP %d, want a 4xx", rec.Code)
			}
			if !strings.Contains(string(body), "<Code>"+tc.wantCode+"</Code>") {
				t.Errorf("got %s, want code %s", body, tc.wantCode)
			}
			if !strings.Contains(string(body), tc.wantText) {
				t.Errorf("got %s, want it to name %q", body, tc.wantText)
			}
		})
	}
}

// TestBackendPanicIsInternalError: a bug in the backend is a 500 answer,
// and the handler keeps serving.
func TestBackendPanicIsInternalError(t *testing.T) {
	h := NewEC2Handler(panickingEC2{})
	post := func(action string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(url.Values{"Action": {action}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := post("DescribeSubnets"); rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "<Code>InternalError</Code>") {
		t.Errorf("got HTTP %d %s, want a 500 InternalError", rec.Code, rec.Body)
	}
	if rec := post("DescribeSecurityGroups"); rec.Code != http.StatusOK {
		t.Errorf("after a panic got HTTP %d %s, want 200", rec.Code, rec.Body)
	}
}

type panickingEC2 struct{}

func (panickingEC2) DescribeSubnets(_ context.Context, _ *ec2.DescribeSubnetsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error) {
	panic("nil map")
}

func (panickingEC2) DescribeSecurityGroups(_ context.Context, _ *ec2.DescribeSecurityGroupsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error) {
	return &ec2.DescribeSecurityGroupsOutput{}, nil
}
