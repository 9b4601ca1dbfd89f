package fake

import (
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// fleetAnswer is the CreateFleet answer the switches on EC2 make of out: a
// copy with the fields they drop removed (out itself, remembered for the
// client token, is not changed). The caller holds e.mu.
func (e *EC2) fleetAnswer(out *ec2.CreateFleetOutput) *ec2.CreateFleetOutput {
	if !e.FleetOmitsInstancePlacement && !e.FleetOmitsOverrideZones && !e.FleetOmitsOverrides {
		return out
	}
	answer := *out
	answer.Instances = make([]ec2types.CreateFleetInstance, len(out.Instances))
	for i, fi := range out.Instances {
		if e.FleetOmitsInstancePlacement {
			fi.AvailabilityZone, fi.SubnetId = nil, nil
		}
		if lto := fi.LaunchTemplateAndOverrides; lto != nil && lto.Overrides != nil && e.FleetOmitsOverrideZones {
			overrides := *lto.Overrides
			overrides.AvailabilityZone = nil
			fi.LaunchTemplateAndOverrides = &ec2types.LaunchTemplateAndOverridesResponse{
				LaunchTemplateSpecification: lto.LaunchTemplateSpecification,
				Overrides:                   &overrides,
			}
		}
		if e.FleetOmitsOverrides {
			fi.LaunchTemplateAndOverrides = nil
		}
		answer.Instances[i] = fi
	}
	return &answer
}

// describeInstancesInput is the request DescribeInstances answers: with
// IgnoreFilters, one for every instance. The caller holds e.mu.
func (e *EC2) describeInstancesInput(in *ec2.DescribeInstancesInput) *ec2.DescribeInstancesInput {
	if !e.IgnoreFilters {
		return in
	}
	return &ec2.DescribeInstancesInput{MaxResults: in.MaxResults, NextToken: in.NextToken}
}

// describeLaunchTemplatesInput is the request DescribeLaunchTemplates
// answers: with IgnoreFilters, one for every launch template. The caller
// holds e.mu.
func (e *EC2) describeLaunchTemplatesInput(in *ec2.DescribeLaunchTemplatesInput) *ec2.DescribeLaunchTemplatesInput {
	if !e.IgnoreFilters {
		return in
	}
	return &ec2.DescribeLaunchTemplatesInput{MaxResults: in.MaxResults, NextToken: in.NextToken}
}
