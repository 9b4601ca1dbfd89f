package fake

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// networkState holds the fake's subnets, security groups and capacity
// reservations (ec2_reservations.go), in the order they were added (EC2
// answers in a stable order; so does the fake).
type networkState struct {
	subnets        []ec2types.Subnet
	securityGroups []ec2types.SecurityGroup
	reservations   []ec2types.CapacityReservation
}

// NewSubnet builds an available subnet in zone (zone ID zoneID) with
// freeIPs available addresses and the given tags, owned by AccountID.
func NewSubnet(id, zone, zoneID string, freeIPs int32, tags map[string]string) ec2types.Subnet {
	return ec2types.Subnet{
		SubnetId:                ptr(id),
		AvailabilityZone:        ptr(zone),
		AvailabilityZoneId:      ptr(zoneID),
		AvailableIpAddressCount: ptr(freeIPs),
		State:                   ec2types.SubnetStateAvailable,
		VpcId:                   ptr("vpc-test"),
		OwnerId:                 ptr(AccountID),
		Tags:                    Tags(tags),
	}
}

// NewSecurityGroup builds a security group named name with the given tags.
func NewSecurityGroup(id, name string, tags map[string]string) ec2types.SecurityGroup {
	return ec2types.SecurityGroup{
		GroupId:   ptr(id),
		GroupName: ptr(name),
		VpcId:     ptr("vpc-test"),
		OwnerId:   ptr(AccountID),
		Tags:      Tags(tags),
	}
}

// AddSubnets adds subnets, replacing any with the same ID.
func (e *EC2) AddSubnets(subnets ...ec2types.Subnet) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range subnets {
		e.network.subnets = slices.DeleteFunc(e.network.subnets, func(have ec2types.Subnet) bool { return deref(have.SubnetId) == deref(s.SubnetId) })
		e.network.subnets = append(e.network.subnets, s)
	}
}

// DeleteSubnet removes a subnet; it reports whether it existed.
func (e *EC2) DeleteSubnet(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	before := len(e.network.subnets)
	e.network.subnets = slices.DeleteFunc(e.network.subnets, func(s ec2types.Subnet) bool { return deref(s.SubnetId) == id })
	return len(e.network.subnets) < before
}

// SetAvailableIPs sets a subnet's available address count, as launches in
// it would consume them.
func (e *EC2) SetAvailableIPs(id string, free int32) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range e.network.subnets {
		if deref(e.network.subnets[i].SubnetId) == id {
			e.network.subnets[i].AvailableIpAddressCount = ptr(free)
		}
	}
}

// AddSecurityGroups adds security groups, replacing any with the same ID.
func (e *EC2) AddSecurityGroups(groups ...ec2types.SecurityGroup) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, g := range groups {
		e.network.securityGroups = slices.DeleteFunc(e.network.securityGroups, func(have ec2types.SecurityGroup) bool { return deref(have.GroupId) == deref(g.GroupId) })
		e.network.securityGroups = append(e.network.securityGroups, g)
	}
}

// DeleteSecurityGroup removes a security group; it reports whether it existed.
func (e *EC2) DeleteSecurityGroup(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	before := len(e.network.securityGroups)
	e.network.securityGroups = slices.DeleteFunc(e.network.securityGroups, func(g ec2types.SecurityGroup) bool { return deref(g.GroupId) == id })
	return len(e.network.securityGroups) < before
}

// DescribeSubnets answers SubnetIds (an unknown ID is
// InvalidSubnetID.NotFound) and the filters subnet-id, availability-zone,
// availability-zone-id, vpc-id, state, tag:<key> and tag-key, paginated with
// MaxResults 5..1000.
func (e *EC2) DescribeSubnets(_ context.Context, in *ec2.DescribeSubnetsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error) {
	if err := e.enter("DescribeSubnets"); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, id := range in.SubnetIds {
		if !slices.ContainsFunc(e.network.subnets, func(s ec2types.Subnet) bool { return deref(s.SubnetId) == id }) {
			return nil, APIError("InvalidSubnetID.NotFound", fmt.Sprintf("The subnet ID '%s' does not exist", id))
		}
	}
	var matched []ec2types.Subnet
	for _, s := range e.network.subnets {
		if len(in.SubnetIds) > 0 && !slices.Contains(in.SubnetIds, deref(s.SubnetId)) {
			continue
		}
		ok, err := matchFilters(in.Filters, subnetFields(s))
		if err != nil {
			return nil, err
		}
		if ok {
			matched = append(matched, s)
		}
	}
	out, next, err := page(matched, in.MaxResults, in.NextToken, 5, 1000)
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeSubnetsOutput{Subnets: slices.Clone(out), NextToken: next}, nil
}

func subnetFields(s ec2types.Subnet) filterFields {
	return func(name string) ([]string, bool) {
		switch name {
		case "subnet-id":
			return []string{deref(s.SubnetId)}, true
		case "availability-zone":
			return []string{deref(s.AvailabilityZone)}, true
		case "availability-zone-id":
			return []string{deref(s.AvailabilityZoneId)}, true
		case "vpc-id":
			return []string{deref(s.VpcId)}, true
		case "state":
			return []string{string(s.State)}, true
		case "available-ip-address-count":
			return []string{strconv.Itoa(int(deref(s.AvailableIpAddressCount)))}, true
		}
		return tagFields(s.Tags, name)
	}
}

// DescribeSecurityGroups answers GroupIds and GroupNames (an unknown one is
// InvalidGroup.NotFound) and the filters group-id, group-name, vpc-id,
// tag:<key> and tag-key, paginated with MaxResults 5..1000. As in EC2,
// MaxResults may not be combined with GroupIds.
func (e *EC2) DescribeSecurityGroups(_ context.Context, in *ec2.DescribeSecurityGroupsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error) {
	if err := e.enter("DescribeSecurityGroups"); err != nil {
		return nil, err
	}
	if in.MaxResults != nil && len(in.GroupIds) > 0 {
		return nil, APIError("InvalidParameterCombination", "The parameter groupIds cannot be used with the parameter maxResults")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	has := func(pick func(ec2types.SecurityGroup) *string, v string) bool {
		return slices.ContainsFunc(e.network.securityGroups, func(g ec2types.SecurityGroup) bool { return deref(pick(g)) == v })
	}
	groupID := func(g ec2types.SecurityGroup) *string { return g.GroupId }
	groupName := func(g ec2types.SecurityGroup) *string { return g.GroupName }
	for _, id := range in.GroupIds {
		if !has(groupID, id) {
			return nil, APIError("InvalidGroup.NotFound", fmt.Sprintf("The security group '%s' does not exist", id))
		}
	}
	for _, name := range in.GroupNames {
		if !has(groupName, name) {
			return nil, APIError("InvalidGroup.NotFound", fmt.Sprintf("The security group '%s' does not exist in default VPC 'vpc-test'", name))
		}
	}
	var matched []ec2types.SecurityGroup
	for _, g := range e.network.securityGroups {
		if len(in.GroupIds) > 0 && !slices.Contains(in.GroupIds, deref(g.GroupId)) {
			continue
		}
		if len(in.GroupNames) > 0 && !slices.Contains(in.GroupNames, deref(g.GroupName)) {
			continue
		}
		ok, err := matchFilters(in.Filters, securityGroupFields(g))
		if err != nil {
			return nil, err
		}
		if ok {
			matched = append(matched, g)
		}
	}
	out, next, err := page(matched, in.MaxResults, in.NextToken, 5, 1000)
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeSecurityGroupsOutput{SecurityGroups: slices.Clone(out), NextToken: next}, nil
}

func securityGroupFields(g ec2types.SecurityGroup) filterFields {
	return func(name string) ([]string, bool) {
		switch name {
		case "group-id":
			return []string{deref(g.GroupId)}, true
		case "group-name":
			return []string{deref(g.GroupName)}, true
		case "vpc-id":
			return []string{deref(g.VpcId)}, true
		case "owner-id":
			return []string{deref(g.OwnerId)}, true
		}
		return tagFields(g.Tags, name)
	}
}
