package instance

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// EC2API is the slice of the EC2 API the instance provider calls; the SDK
// client and fake.EC2 both satisfy it.
type EC2API interface {
	fleetCreator
	instanceDescriber
	instanceTerminator
	tagCreator
}

type fleetCreator interface {
	CreateFleet(ctx context.Context, in *ec2.CreateFleetInput, optFns ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error)
}

type instanceDescriber interface {
	DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, optFns ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
}

type instanceTerminator interface {
	TerminateInstances(ctx context.Context, in *ec2.TerminateInstancesInput, optFns ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error)
}

type tagCreator interface {
	CreateTags(ctx context.Context, in *ec2.CreateTagsInput, optFns ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error)
}

// UnavailableOfferings remembers offerings EC2 recently refused, so
// instance types report them unavailable until the entry expires.
type UnavailableOfferings interface {
	MarkUnavailable(ctx context.Context, reason, instanceType, zone, capacityType string)
}

// capacityTypeMarker is the optional part of UnavailableOfferings that
// takes a whole capacity type out (spot without its service-linked role).
type capacityTypeMarker interface {
	MarkCapacityTypeUnavailable(ctx context.Context, reason, capacityType string)
}

// placementGroupMarker is the optional part of UnavailableOfferings that
// marks an offering refused inside a placement group (and partition) only.
type placementGroupMarker interface {
	MarkUnavailableInPlacementGroup(ctx context.Context, reason, instanceType, zone, capacityType, groupID, partition string)
}

// subnetMarker is the optional part of UnavailableOfferings that takes a
// subnet out of launches (no free addresses left).
type subnetMarker interface {
	MarkSubnetUnavailable(ctx context.Context, reason, subnetID string)
}
