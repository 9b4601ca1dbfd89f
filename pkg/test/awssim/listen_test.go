package awssim

import (
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// TestEndpointFromEnvironment checks the way the controller process is
// pointed at the simulated AWS: AWS_ENDPOINT_URL read by
// config.LoadDefaultConfig sends every service client to the one listener,
// and the router tells them apart by their signing service.
func TestEndpointFromEnvironment(t *testing.T) {
	// EC2 and IAM are served by the query handlers; here a stand-in shows
	// the router sent their requests to the right place.
	var ec2Answered, iamAnswered atomic.Int32
	standIn := func(n *atomic.Int32) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			n.Add(1)
			w.WriteHeader(http.StatusNotImplemented)
		})
	}
	s := newSimulated(t, map[string]http.Handler{"ec2": standIn(&ec2Answered), "iam": standIn(&iamAnswered)})
	s.ssm.PutParameter("/p", "v")
	s.eks.PutCluster("c", "https://127.0.0.1:6443", "")

	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL":            s.url,
		"AWS_REGION":                  "us-west-2",
		"AWS_ACCESS_KEY_ID":           "AKIDSIMULATED",
		"AWS_SECRET_ACCESS_KEY":       "secret",
		"AWS_SESSION_TOKEN":           "",
		"AWS_PROFILE":                 "",
		"AWS_CONFIG_FILE":             filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_MAX_ATTEMPTS":            "1",
	} {
		t.Setenv(k, v)
	}
	cfg, err := config.LoadDefaultConfig(t.Context())
	if err != nil {
		t.Fatalf("LoadDefaultConfig: %v", err)
	}

	if _, err := ssm.NewFromConfig(cfg).GetParameter(t.Context(), &ssm.GetParameterInput{Name: aws.String("/p")}); err != nil {
		t.Errorf("ssm: %v", err)
	}
	if _, err := sqs.NewFromConfig(cfg).GetQueueUrl(t.Context(), &sqs.GetQueueUrlInput{QueueName: aws.String("karp-interruption")}); err != nil {
		t.Errorf("sqs: %v", err)
	}
	pricingClient := pricing.NewFromConfig(cfg, func(o *pricing.Options) { o.Region = "us-east-1" })
	if _, err := pricingClient.GetProducts(t.Context(), &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2")}); err != nil {
		t.Errorf("pricing: %v", err)
	}
	if _, err := eks.NewFromConfig(cfg).DescribeCluster(t.Context(), &eks.DescribeClusterInput{Name: aws.String("c")}); err != nil {
		t.Errorf("eks: %v", err)
	}
	// The stand-in handlers answer 501: the calls fail, but they arrived.
	_, _ = ec2.NewFromConfig(cfg).DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{})
	_, _ = iam.NewFromConfig(cfg).GetInstanceProfile(t.Context(), &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("p")})

	for _, tc := range []struct{ service, operation string }{
		{"ssm", "GetParameter"}, {"sqs", "GetQueueUrl"}, {"pricing", "GetProducts"},
		{"eks", "DescribeCluster"}, {"ec2", "DescribeInstances"}, {"iam", "GetInstanceProfile"},
	} {
		if got := s.router.Calls(tc.service, tc.operation); got != 1 {
			t.Errorf("Calls(%s, %s) = %d, want 1", tc.service, tc.operation, got)
		}
	}
	if ec2Answered.Load() != 1 || iamAnswered.Load() != 1 {
		t.Errorf("stand-in handlers answered ec2 %d and iam %d times, want once each", ec2Answered.Load(), iamAnswered.Load())
	}
}
