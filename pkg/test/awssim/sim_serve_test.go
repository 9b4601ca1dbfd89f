package awssim

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"
)

// TestServedSimThroughTheSDKsDefaultConfig serves the Sim and reaches it
// as the controller does: the SDK's default configuration read from Env.
func TestServedSimThroughTheSDKsDefaultConfig(t *testing.T) {
	ctx := t.Context()
	s := newTestSim(t)
	if _, err := s.Serve(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Serve(); err == nil {
		t.Error("serving twice succeeded")
	}
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Region != DefaultRegion {
		t.Errorf("region %q", cfg.Region)
	}
	pages := ec2.NewDescribeInstanceTypesPaginator(ec2.NewFromConfig(cfg), &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(100)})
	n := 0
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.InstanceTypes)
	}
	if n != len(s.types) {
		t.Errorf("described %d instance types over the wire, the catalog has %d", n, len(s.types))
	}
	cluster, err := eks.NewFromConfig(cfg).DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(DefaultClusterName)})
	if err != nil || aws.ToString(cluster.Cluster.Endpoint) != "https://127.0.0.1:6443" {
		t.Errorf("DescribeCluster: %v, %v", cluster, err)
	}
	ssmClient := ssm.NewFromConfig(cfg)
	if _, err := ssmClient.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(al2023x86)}); err != nil {
		t.Errorf("GetParameter: %v", err)
	}
	s.SetSSMOutage(true)
	_, err = ssmClient.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(al2023x86)})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InternalServerError" {
		t.Errorf("GetParameter during the outage: %v, want InternalServerError", err)
	}
	s.SetSSMOutage(false)
	if _, err := ssmClient.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(al2023x86)}); err != nil {
		t.Errorf("GetParameter after the outage: %v", err)
	}
	if calls := s.Router().Calls("ssm", "GetParameter"); calls < 3 {
		t.Errorf("the router counted %d GetParameter calls", calls)
	}
}
