package awssim

import (
	"errors"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// The query's DryRun parameter reaches the fake: an allowed dry run of a
// launch call answers DryRunOperation (412), a denied one
// UnauthorizedOperation (403), and neither launches anything.
func TestEC2DryRunsOverTheWire(t *testing.T) {
	tests := map[string]struct {
		deny       []string
		wantCode   string
		wantStatus int
	}{
		"allowed": {wantCode: "DryRunOperation", wantStatus: http.StatusPreconditionFailed},
		"denied":  {deny: []string{"RunInstances", "CreateFleet"}, wantCode: "UnauthorizedOperation", wantStatus: http.StatusForbidden},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			backend := fake.NewEC2()
			backend.Deny(tc.deny...)
			client := ec2Client(serve(t, NewEC2Handler(backend)), noRetries())
			_, runErr := client.RunInstances(t.Context(), &ec2.RunInstancesInput{
				DryRun: aws.Bool(true), MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
				LaunchTemplate: &ec2types.LaunchTemplateSpecification{LaunchTemplateName: aws.String("lt"), Version: aws.String("$Latest")},
			})
			_, fleetErr := client.CreateFleet(t.Context(), &ec2.CreateFleetInput{
				DryRun: aws.Bool(true), Type: ec2types.FleetTypeInstant,
				TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
					TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand,
				},
				LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
					LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String("lt"), Version: aws.String("$Latest")},
				}},
			})
			for op, err := range map[string]error{"RunInstances": runErr, "CreateFleet": fleetErr} {
				var api smithy.APIError
				if !errors.As(err, &api) || api.ErrorCode() != tc.wantCode {
					t.Errorf("%s: got %v, want %s", op, err, tc.wantCode)
				}
				var resp *awshttp.ResponseError
				if !errors.As(err, &resp) || resp.HTTPStatusCode() != tc.wantStatus {
					t.Errorf("%s: got %v, want HTTP %d", op, err, tc.wantStatus)
				}
			}
			if n := len(backend.Instances()); n != 0 {
				t.Errorf("%d instances after dry runs, want none", n)
			}
		})
	}
}
