package fake

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// A denied action answers UnauthorizedOperation, dry run or not, until it
// is allowed again; RunInstances answers dry runs only.
func TestDenyRefusesAnAction(t *testing.T) {
	e := NewEC2()
	run := &ec2.RunInstancesInput{DryRun: aws.Bool(true), MinCount: aws.Int32(1), MaxCount: aws.Int32(1)}
	if _, err := e.RunInstances(t.Context(), run); apiCode(err) != "DryRunOperation" {
		t.Errorf("allowed RunInstances dry run: error %v, want DryRunOperation", err)
	}
	e.Deny("RunInstances", "CreateFleet")
	if _, err := e.RunInstances(t.Context(), run); apiCode(err) != "UnauthorizedOperation" {
		t.Errorf("denied RunInstances dry run: error %v, want UnauthorizedOperation", err)
	}
	if _, err := e.CreateFleet(t.Context(), &ec2.CreateFleetInput{}); apiCode(err) != "UnauthorizedOperation" {
		t.Errorf("denied CreateFleet: error %v, want UnauthorizedOperation", err)
	}
	e.Allow("RunInstances")
	if _, err := e.RunInstances(t.Context(), run); apiCode(err) != "DryRunOperation" {
		t.Errorf("allowed again: error %v, want DryRunOperation", err)
	}
	if _, err := e.RunInstances(t.Context(), &ec2.RunInstancesInput{MinCount: aws.Int32(1), MaxCount: aws.Int32(1)}); apiCode(err) != "UnsupportedOperation" {
		t.Errorf("RunInstances without DryRun: error %v, want UnsupportedOperation", err)
	}
	if got := e.Calls("RunInstances"); got != 4 {
		t.Errorf("%d RunInstances calls counted, want 4", got)
	}
}
