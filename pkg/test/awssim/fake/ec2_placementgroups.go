package fake

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// CodePlacementGroupUnknown is EC2's error for a placement group name or ID
// that does not exist.
const CodePlacementGroupUnknown = "InvalidPlacementGroup.Unknown"

// placementState holds the account's placement groups.
type placementState struct {
	groups []ec2types.PlacementGroup
}

// NewPlacementGroup builds an available placement group. partitions is the
// partition count of a partition group (ignored otherwise); a spread group
// spreads over racks.
func NewPlacementGroup(id, name string, strategy ec2types.PlacementStrategy, partitions int32) ec2types.PlacementGroup {
	pg := ec2types.PlacementGroup{
		GroupId:   ptr(id),
		GroupName: ptr(name),
		GroupArn:  ptr(fmt.Sprintf("arn:aws:ec2:us-west-2:%s:placement-group/%s", AccountID, name)),
		Strategy:  strategy,
		State:     ec2types.PlacementGroupStateAvailable,
	}
	switch strategy {
	case ec2types.PlacementStrategyPartition:
		pg.PartitionCount = ptr(partitions)
	case ec2types.PlacementStrategySpread:
		pg.SpreadLevel = ec2types.SpreadLevelRack
	}
	return pg
}

// AddPlacementGroups adds groups, replacing any with the same ID.
func (e *EC2) AddPlacementGroups(groups ...ec2types.PlacementGroup) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, g := range groups {
		e.placement.groups = slices.DeleteFunc(e.placement.groups, func(have ec2types.PlacementGroup) bool {
			return deref(have.GroupId) == deref(g.GroupId)
		})
		e.placement.groups = append(e.placement.groups, g)
	}
}

// DeletePlacementGroup moves the group to the deleted state, in which
// DescribePlacementGroups still lists it for a while (as EC2 does); it
// reports whether the group exists.
func (e *EC2) DeletePlacementGroup(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range e.placement.groups {
		if deref(e.placement.groups[i].GroupId) == id {
			e.placement.groups[i].State = ec2types.PlacementGroupStateDeleted
			return true
		}
	}
	return false
}

// DescribePlacementGroups answers GroupIds and GroupNames (a name or ID
// the account never had is InvalidPlacementGroup.Unknown, as in EC2) and
// the filters group-name, group-id, state, strategy, partition-count,
// spread-level, tag:<key> and tag-key.
func (e *EC2) DescribePlacementGroups(_ context.Context, in *ec2.DescribePlacementGroupsInput, _ ...func(*ec2.Options)) (*ec2.DescribePlacementGroupsOutput, error) {
	if err := e.enterCall("DescribePlacementGroups", in.DryRun); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, id := range in.GroupIds {
		if !slices.ContainsFunc(e.placement.groups, func(g ec2types.PlacementGroup) bool { return deref(g.GroupId) == id }) {
			return nil, APIError(CodePlacementGroupUnknown, fmt.Sprintf("The Placement Group '%s' is unknown.", id))
		}
	}
	for _, name := range in.GroupNames {
		if !slices.ContainsFunc(e.placement.groups, func(g ec2types.PlacementGroup) bool { return deref(g.GroupName) == name }) {
			return nil, APIError(CodePlacementGroupUnknown, fmt.Sprintf("The Placement Group '%s' is unknown.", name))
		}
	}
	var out []ec2types.PlacementGroup
	for _, g := range e.placement.groups {
		if len(in.GroupIds) > 0 && !slices.Contains(in.GroupIds, deref(g.GroupId)) {
			continue
		}
		if len(in.GroupNames) > 0 && !slices.Contains(in.GroupNames, deref(g.GroupName)) {
			continue
		}
		ok, err := matchFilters(in.Filters, placementGroupFields(g))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, g)
		}
	}
	return &ec2.DescribePlacementGroupsOutput{PlacementGroups: out}, nil
}

func placementGroupFields(g ec2types.PlacementGroup) filterFields {
	return func(name string) ([]string, bool) {
		switch name {
		case "group-name":
			return []string{deref(g.GroupName)}, true
		case "group-id":
			return []string{deref(g.GroupId)}, true
		case "state":
			return []string{string(g.State)}, true
		case "strategy":
			return []string{string(g.Strategy)}, true
		case "partition-count":
			return []string{fmt.Sprint(deref(g.PartitionCount))}, true
		case "spread-level":
			return []string{string(g.SpreadLevel)}, true
		}
		return tagFields(g.Tags, name)
	}
}

// spreadLimit is how many running instances a spread placement group holds
// in one zone; spreadLimitMessage is EC2's error message past it (with
// the code InsufficientInstanceCapacity).
const (
	spreadLimit        = 7
	spreadLimitMessage = "You've reached the limit of instances in this spread placement group. A spread placement group can have up to seven instances per Availability Zone."
)

// place puts an instance just launched into the placement group its launch
// template names (by ID or name; launchInstance already took its tenancy),
// with, in a partition group, the partition the template names or else the
// next one in turn, as EC2 spreads instances over partitions. The caller
// holds e.mu.
func (e *EC2) place(inst *instance, want *ec2types.LaunchTemplatePlacementRequest) {
	if inst.Placement != nil {
		e.placeInGroup(inst, want)
	}
}

// spreadFull reports whether the spread group want names already holds
// spreadLimit instances that are not terminated in zone. The caller holds
// e.mu.
func (e *EC2) spreadFull(want *ec2types.LaunchTemplatePlacementRequest, zone string) bool {
	g, ok := e.groupOf(want)
	if !ok || g.Strategy != ec2types.PlacementStrategySpread {
		return false
	}
	n := 0
	for _, inst := range e.launch.instances {
		p := inst.Placement
		if p == nil || deref(p.GroupId) != deref(g.GroupId) || deref(p.AvailabilityZone) != zone {
			continue
		}
		if st := inst.State; st != nil && (st.Name == ec2types.InstanceStateNameShuttingDown || st.Name == ec2types.InstanceStateNameTerminated) {
			continue
		}
		n++
	}
	return n >= spreadLimit
}

// groupOf is the group a launch template's placement names, by ID or name.
func (e *EC2) groupOf(want *ec2types.LaunchTemplatePlacementRequest) (ec2types.PlacementGroup, bool) {
	i := slices.IndexFunc(e.placement.groups, func(g ec2types.PlacementGroup) bool {
		return aws.ToString(want.GroupId) != "" && deref(g.GroupId) == aws.ToString(want.GroupId) ||
			aws.ToString(want.GroupName) != "" && deref(g.GroupName) == aws.ToString(want.GroupName)
	})
	if i < 0 {
		return ec2types.PlacementGroup{}, false
	}
	return e.placement.groups[i], true
}

func (e *EC2) placeInGroup(inst *instance, want *ec2types.LaunchTemplatePlacementRequest) {
	g, ok := e.groupOf(want)
	if !ok {
		return
	}
	inst.Placement.GroupId = g.GroupId
	inst.Placement.GroupName = g.GroupName
	if g.Strategy != ec2types.PlacementStrategyPartition {
		return
	}
	partition := aws.ToInt32(want.PartitionNumber)
	if partition == 0 {
		members := 0
		for _, other := range e.launch.instances {
			if other != inst && other.Placement != nil && deref(other.Placement.GroupId) == deref(g.GroupId) {
				members++
			}
		}
		partition = int32(members)%max(deref(g.PartitionCount), 1) + 1
	}
	inst.Placement.PartitionNumber = ptr(partition)
}
