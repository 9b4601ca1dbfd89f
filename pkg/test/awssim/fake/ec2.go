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

	// The switches below make the fake answer as an emulator or another
	// EC2 version may (ec2_answers.go); all default off. Set them before
	// the calls they should affect.

	// FleetOmitsInstancePlacement drops the per-instance AvailabilityZone
	// and SubnetId of CreateFleet's Instances (fields EC2 added in 2026).
	FleetOmitsInstancePlacement bool
	// FleetOmitsOverrideZones drops the AvailabilityZone of each
	// Instances[i].LaunchTemplateAndOverrides.Overrides (SubnetId stays).
	FleetOmitsOverrideZones bool
	// FleetOmitsOverrides drops Instances[i].LaunchTemplateAndOverrides.
	FleetOmitsOverrides bool
	// IgnoreFilters makes DescribeInstances and DescribeLaunchTemplates
	// ignore their Filters, InstanceIds, LaunchTemplateNames and
	// LaunchTemplateIds: every instance and launch template in the account
	// is returned.
	IgnoreFilters bool

	// denials are the actions Deny refused (ec2_dryrun.go).
	denials denials

	mu      sync.Mutex
	catalog catalogState
	network networkState
	images  imageState
	launch  launchState
	// placement holds the placement groups (ec2_placementgroups.go).
	placement placementState
	// status holds instances' status checks and scheduled events
	// (ec2_instancestatus.go).
	status statusState
}

// NewEC2 returns an empty fake; tests seed it through its Add*/Set* methods.
func NewEC2() *EC2 {
	return &EC2{}
}

// enterCall begins a call of op that takes a DryRun flag: it counts the
// call and returns the error a test queued for it, or UnauthorizedOperation
// when Deny refused op; a dry run then answers
// DryRunOperation, as EC2 does when the caller may make the call.
func (e *EC2) enterCall(op string, dryRun *bool) error {
	if err := e.enter(op); err != nil {
		return err
	}
	if err := e.unauthorized(op); err != nil {
		return err
	}
	if aws.ToBool(dryRun) {
		return APIError("DryRunOperation", "Request would have succeeded, but DryRun flag is set.")
	}
	return nil
}
