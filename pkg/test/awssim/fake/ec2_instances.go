package fake

import (
	"context"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Instances returns every instance ever launched (terminated ones
// included), in launch order.
func (e *EC2) Instances() []ec2types.Instance {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	return e.launch.views(nil)
}

// lifecycleOf is the fleet's lifecycle for a capacity type (EC2 leaves
// it empty for on-demand).
func lifecycleOf(capacityType string) ec2types.InstanceLifecycle {
	if capacityType == string(ec2types.DefaultTargetCapacityTypeSpot) {
		return ec2types.InstanceLifecycleSpot
	}
	return ec2types.InstanceLifecycleOnDemand
}

// launchInstance records a running instance launched by the fleet from o.
func (s *launchState) launchInstance(in *ec2.CreateFleetInput, o fleetOverride) *instance {
	data := o.template.data
	inst := &instance{Instance: ec2types.Instance{
		InstanceId:   aws.String(s.id("i")),
		InstanceType: ec2types.InstanceType(o.pool.InstanceType),
		ImageId:      cmpOr(o.override.ImageId, data.ImageId),
		SubnetId:     o.override.SubnetId,
		Placement:    &ec2types.Placement{AvailabilityZone: aws.String(o.pool.Zone), Tenancy: ec2types.TenancyDefault},
		LaunchTime:   aws.Time(s.clock.Now()),
		State:        &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning, Code: aws.Int32(16)},
		ClientToken:  in.ClientToken,
	}}
	if data.Placement != nil && data.Placement.Tenancy != "" {
		inst.Placement.Tenancy = data.Placement.Tenancy
	}
	if o.pool.CapacityType == string(ec2types.DefaultTargetCapacityTypeSpot) {
		inst.SpotInstanceRequestId = aws.String(s.id("sir"))
		inst.InstanceLifecycle = ec2types.InstanceLifecycleTypeSpot
	}
	if id := reservationOf(o.template); id != "" {
		inst.CapacityReservationId = aws.String(id)
		inst.CapacityReservationSpecification = &ec2types.CapacityReservationSpecificationResponse{
			CapacityReservationPreference: data.CapacityReservationSpecification.CapacityReservationPreference,
			CapacityReservationTarget:     &ec2types.CapacityReservationTargetResponse{CapacityReservationId: aws.String(id)},
		}
		inst.InstanceLifecycle = reservedLifecycle(data) // ec2_reservations.go
	}
	if data.IamInstanceProfile != nil {
		inst.IamInstanceProfile = &ec2types.IamInstanceProfile{Arn: data.IamInstanceProfile.Arn, Id: data.IamInstanceProfile.Name}
	}
	groups := slices.Clone(data.SecurityGroupIds)
	for _, ni := range data.NetworkInterfaces {
		groups = append(groups, ni.Groups...)
		// The interfaces the template lays out, with their type (efa,
		// efa-only, interface) and slot, as DescribeInstances lists them.
		inst.NetworkInterfaces = append(inst.NetworkInterfaces, ec2types.InstanceNetworkInterface{
			InterfaceType: ni.InterfaceType, SubnetId: cmpOr(ni.SubnetId, o.override.SubnetId),
			Attachment: &ec2types.InstanceNetworkInterfaceAttachment{NetworkCardIndex: ni.NetworkCardIndex, DeviceIndex: ni.DeviceIndex},
		})
	}
	for _, g := range groups {
		inst.SecurityGroups = append(inst.SecurityGroups, ec2types.GroupIdentifier{GroupId: aws.String(g)})
	}
	for _, spec := range in.TagSpecifications {
		if spec.ResourceType == ec2types.ResourceTypeInstance {
			inst.Tags = upsertTags(inst.Tags, spec.Tags)
		}
	}
	s.instances[aws.ToString(inst.InstanceId)] = inst
	s.order = append(s.order, aws.ToString(inst.InstanceId))
	return inst
}

func cmpOr(a, b *string) *string {
	if aws.ToString(a) != "" {
		return a
	}
	return b
}

func upsertTags(tags, add []ec2types.Tag) []ec2types.Tag {
	for _, t := range add {
		i := slices.IndexFunc(tags, func(have ec2types.Tag) bool { return aws.ToString(have.Key) == aws.ToString(t.Key) })
		if i >= 0 {
			tags[i] = t
		} else {
			tags = append(tags, t)
		}
	}
	return tags
}

// known fails with EC2's InvalidInstanceID.NotFound naming the first of
// ids the fake never launched.
func (s *launchState) known(ids []string) error {
	for _, id := range ids {
		if _, ok := s.instances[id]; !ok {
			return launchErr(codeInstanceIDNotFound, "The instance ID '%s' does not exist", id)
		}
	}
	return nil
}

// views returns the current view of the instances with the given IDs
// (every instance when ids is empty), in launch order.
func (s *launchState) views(ids []string) []ec2types.Instance {
	var out []ec2types.Instance
	for _, id := range s.order {
		if len(ids) == 0 || slices.Contains(ids, id) {
			out = append(out, s.instanceView(s.instances[id]))
		}
	}
	return out
}

// instanceView returns a copy of the instance with its current state.
func (s *launchState) instanceView(inst *instance) ec2types.Instance {
	view := inst.Instance
	view.Tags = slices.Clone(inst.Tags)
	view.SecurityGroups = slices.Clone(inst.SecurityGroups)
	if view.State.Name == ec2types.InstanceStateNameShuttingDown && !s.clock.Now().Before(inst.shutdownAt) {
		view.State = &ec2types.InstanceState{Name: ec2types.InstanceStateNameTerminated, Code: aws.Int32(48)}
	}
	return view
}

// DescribeInstances lists instances by ID and by the filters instance-id,
// instance-state-name, tag:<key> and tag-key, paginated. An unknown ID
// fails the call, as in EC2.
func (e *EC2) DescribeInstances(_ context.Context, in *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	if err := e.enter("DescribeInstances"); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	in = e.describeInstancesInput(in)
	if err := e.launch.known(in.InstanceIds); err != nil {
		return nil, err
	}
	var all []ec2types.Reservation
	for _, view := range e.launch.views(in.InstanceIds) {
		id := aws.ToString(view.InstanceId)
		if !instanceMatches(view, in.Filters) {
			continue
		}
		all = append(all, ec2types.Reservation{ReservationId: aws.String("r-" + strings.TrimPrefix(id, "i-")), Instances: []ec2types.Instance{view}})
	}
	page, next, err := paginate(all, in.NextToken, in.MaxResults)
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeInstancesOutput{Reservations: page, NextToken: next}, nil
}

func instanceMatches(inst ec2types.Instance, filters []ec2types.Filter) bool {
	for _, f := range filters {
		switch aws.ToString(f.Name) {
		case "instance-id":
			if !slices.Contains(f.Values, aws.ToString(inst.InstanceId)) {
				return false
			}
		case "instance-state-name":
			if !slices.Contains(f.Values, string(inst.State.Name)) {
				return false
			}
		case "instance-type":
			if !slices.Contains(f.Values, string(inst.InstanceType)) {
				return false
			}
		case "availability-zone":
			if !slices.Contains(f.Values, aws.ToString(inst.Placement.AvailabilityZone)) {
				return false
			}
		}
	}
	return tagsMatch(inst.Tags, filters)
}

// TerminateInstances moves instances to shutting-down; they turn
// terminated after the termination delay. An unknown ID fails the call.
func (e *EC2) TerminateInstances(_ context.Context, in *ec2.TerminateInstancesInput, _ ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error) {
	if err := e.enter("TerminateInstances"); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	if err := e.launch.known(in.InstanceIds); err != nil {
		return nil, err
	}
	out := &ec2.TerminateInstancesOutput{}
	for _, id := range in.InstanceIds {
		inst := e.launch.instances[id]
		previous := e.launch.instanceView(inst).State
		if previous.Name != ec2types.InstanceStateNameShuttingDown && previous.Name != ec2types.InstanceStateNameTerminated {
			inst.State = &ec2types.InstanceState{Name: ec2types.InstanceStateNameShuttingDown, Code: aws.Int32(32)}
			inst.shutdownAt = e.launch.clock.Now().Add(e.launch.terminationDelay)
		}
		out.TerminatingInstances = append(out.TerminatingInstances, ec2types.InstanceStateChange{
			InstanceId:    aws.String(id),
			PreviousState: previous,
			CurrentState:  e.launch.instanceView(inst).State,
		})
	}
	return out, nil
}

// CreateTags adds or overwrites tags on instances and launch templates.
func (e *EC2) CreateTags(_ context.Context, in *ec2.CreateTagsInput, _ ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
	if err := e.enter("CreateTags"); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	var instanceIDs []string
	for _, id := range in.Resources {
		if strings.HasPrefix(id, "i-") {
			instanceIDs = append(instanceIDs, id)
		}
	}
	if err := e.launch.known(instanceIDs); err != nil {
		return nil, err
	}
	for _, id := range in.Resources {
		if inst, ok := e.launch.instances[id]; ok {
			inst.Tags = upsertTags(inst.Tags, in.Tags)
			continue
		}
		for _, lt := range e.launch.templates {
			if lt.id == id {
				lt.tags = upsertTags(lt.tags, in.Tags)
			}
		}
	}
	return &ec2.CreateTagsOutput{}, nil
}
