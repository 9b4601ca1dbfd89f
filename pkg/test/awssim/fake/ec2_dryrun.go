package fake

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// denials are the EC2 actions the caller's IAM policy does not allow.
type denials struct {
	mu     sync.Mutex
	denied map[string]bool
}

// Deny makes every call of the named EC2 actions ("CreateFleet",
// "RunInstances", ...), dry runs included, answer UnauthorizedOperation,
// as EC2 does for a caller whose policy does not allow them.
func (e *EC2) Deny(actions ...string) {
	e.denials.mu.Lock()
	defer e.denials.mu.Unlock()
	if e.denials.denied == nil {
		e.denials.denied = map[string]bool{}
	}
	for _, a := range actions {
		e.denials.denied[a] = true
	}
}

// Allow undoes Deny for the named actions.
func (e *EC2) Allow(actions ...string) {
	e.denials.mu.Lock()
	defer e.denials.mu.Unlock()
	for _, a := range actions {
		delete(e.denials.denied, a)
	}
}

// unauthorized is UnauthorizedOperation when op is denied, else nil.
func (e *EC2) unauthorized(op string) error {
	e.denials.mu.Lock()
	defer e.denials.mu.Unlock()
	if !e.denials.denied[op] {
		return nil
	}
	return APIError("UnauthorizedOperation", "You are not authorized to perform this operation. User: arn:aws:sts::123456789012:assumed-role/karp/fake is not authorized to perform: ec2:"+op+" because no identity-based policy allows the ec2:"+op+" action.")
}

// RunInstances answers dry runs only (DryRunOperation, or
// UnauthorizedOperation when denied): karp launches through CreateFleet.
func (e *EC2) RunInstances(_ context.Context, in *ec2.RunInstancesInput, _ ...func(*ec2.Options)) (*ec2.RunInstancesOutput, error) {
	if err := e.enterCall("RunInstances", in.DryRun); err != nil {
		return nil, err
	}
	if !aws.ToBool(in.DryRun) {
		return nil, APIError("UnsupportedOperation", "The fake answers RunInstances only as a dry run.")
	}
	return &ec2.RunInstancesOutput{}, nil
}
