package fake

import (
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// EC2 is a stateful fake of the EC2 API calls the provider makes. Its state
// is split by concern, each in its own file: the instance-type catalog and
// spot prices (ec2_catalog.go), subnets and security groups
// (ec2_network.go), images (ec2_images.go), and launch templates, fleets and
// instances (ec2_launch.go). One mutex guards all of it, so a call sees and
// changes a consistent world.
type EC2 struct {
	Faults

	mu      sync.Mutex
	catalog catalogState
	network networkState
	images  imageState
	launch  launchState
}

// NewEC2 returns an empty fake; tests seed it through its Add*/Set* methods.
func NewEC2() *EC2 {
	return &EC2{}
}

// enterCall begins a call of op that takes a DryRun flag: it counts the
// call and returns the error a test queued for it; a dry run then answers
// DryRunOperation, as EC2 does when the caller may make the call.
func (e *EC2) enterCall(op string, dryRun *bool) error {
	if err := e.enter(op); err != nil {
		return err
	}
	if aws.ToBool(dryRun) {
		return APIError("DryRunOperation", "Request would have succeeded, but DryRun flag is set.")
	}
	return nil
}
