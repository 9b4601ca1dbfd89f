package fake

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// NewCapacityReservation builds an active, open, default-type on-demand
// capacity reservation owned by AccountID for count instances of
// instanceType in zone, all available.
func NewCapacityReservation(id, instanceType, zone string, count int32, tags map[string]string) ec2types.CapacityReservation {
	return ec2types.CapacityReservation{
		CapacityReservationId:  ptr(id),
		InstanceType:           ptr(instanceType),
		AvailabilityZone:       ptr(zone),
		AvailableInstanceCount: ptr(count),
		TotalInstanceCount:     ptr(count),
		InstanceMatchCriteria:  ec2types.InstanceMatchCriteriaOpen,
		ReservationType:        ec2types.CapacityReservationTypeDefault,
		State:                  ec2types.CapacityReservationStateActive,
		OwnerId:                ptr(AccountID),
		Interruptible:          ptr(false),
		Tags:                   Tags(tags),
	}
}

// CapacityBlockReclaimLead is how long before a capacity block ends EC2
// starts terminating the instances running in it.
const CapacityBlockReclaimLead = 30 * time.Minute

// NewCapacityBlock builds an active capacity block (a targeted reservation
// of type capacity-block) for count instances of instanceType in zone,
// all available, ending at end.
func NewCapacityBlock(id, instanceType, zone string, count int32, end time.Time) ec2types.CapacityReservation {
	r := NewCapacityReservation(id, instanceType, zone, count, nil)
	r.ReservationType = ec2types.CapacityReservationTypeCapacityBlock
	r.InstanceMatchCriteria = ec2types.InstanceMatchCriteriaTargeted
	r.EndDate = ptr(end)
	return r
}

// AddCapacityReservations adds reservations, replacing any with the same ID.
func (e *EC2) AddCapacityReservations(reservations ...ec2types.CapacityReservation) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range reservations {
		e.network.reservations = slices.DeleteFunc(e.network.reservations, func(have ec2types.CapacityReservation) bool {
			return deref(have.CapacityReservationId) == deref(r.CapacityReservationId)
		})
		e.network.reservations = append(e.network.reservations, r)
	}
}

// SetCapacityReservationState moves a reservation to state (e.g. expired,
// cancelled); it reports whether the reservation exists. A reservation
// that is no longer active lets its instances go as EC2 does: those of an
// on-demand capacity reservation keep running as plain on-demand
// instances (DescribeInstances reports no reservation any more), those of
// a capacity block are reclaimed.
func (e *EC2) SetCapacityReservationState(id string, state ec2types.CapacityReservationState) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	for i := range e.network.reservations {
		r := &e.network.reservations[i]
		if deref(r.CapacityReservationId) == id {
			r.State = state
			if state != ec2types.CapacityReservationStateActive {
				e.releaseReservation(*r)
			}
			return true
		}
	}
	return false
}

// AdvanceCapacityReservations applies what the launch clock's time does
// to reservations (DescribeCapacityReservations applies it too): from
// CapacityBlockReclaimLead before a capacity block's end its instances are
// reclaimed, and a reservation whose end date has passed is expired, its
// instances let go as SetCapacityReservationState does. It is no API call.
func (e *EC2) AdvanceCapacityReservations() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advanceReservations()
}

func (e *EC2) advanceReservations() {
	e.launch.init()
	now := e.launch.clock.Now()
	for i := range e.network.reservations {
		r := &e.network.reservations[i]
		if r.EndDate == nil || r.State != ec2types.CapacityReservationStateActive {
			continue
		}
		switch {
		case !now.Before(*r.EndDate):
			r.State = ec2types.CapacityReservationStateExpired
			e.releaseReservation(*r)
		case r.ReservationType == ec2types.CapacityReservationTypeCapacityBlock && !now.Before(r.EndDate.Add(-CapacityBlockReclaimLead)):
			e.releaseReservation(*r)
		}
	}
}

// releaseReservation lets the live instances of reservation r go: a
// capacity block's are reclaimed, an on-demand reservation's leave it.
func (e *EC2) releaseReservation(r ec2types.CapacityReservation) {
	id := deref(r.CapacityReservationId)
	for _, instID := range e.launch.order {
		inst := e.launch.instances[instID]
		if deref(inst.CapacityReservationId) != id {
			continue
		}
		state := e.launch.instanceView(inst).State.Name
		if state != ec2types.InstanceStateNamePending && state != ec2types.InstanceStateNameRunning {
			continue
		}
		if r.ReservationType == ec2types.CapacityReservationTypeCapacityBlock {
			inst.State = &ec2types.InstanceState{Name: ec2types.InstanceStateNameShuttingDown, Code: ptr(int32(32))}
			inst.shutdownAt = e.launch.clock.Now().Add(e.launch.terminationDelay)
			continue
		}
		inst.CapacityReservationId = nil
		inst.CapacityReservationSpecification = &ec2types.CapacityReservationSpecificationResponse{
			CapacityReservationPreference: ec2types.CapacityReservationPreferenceOpen,
		}
	}
}

// reservedLifecycle is the lifecycle EC2 reports for an instance launched
// into a reservation with the launch template data: a capacity block's
// and an interruptible reservation's instances have their own.
func reservedLifecycle(data *ec2types.RequestLaunchTemplateData) ec2types.InstanceLifecycleType {
	if data.InstanceMarketOptions == nil {
		return ""
	}
	switch data.InstanceMarketOptions.MarketType {
	case ec2types.MarketTypeCapacityBlock:
		return ec2types.InstanceLifecycleTypeCapacityBlock
	case ec2types.MarketTypeInterruptibleCapacityReservation:
		return ec2types.InstanceLifecycleTypeInterruptibleCapacityReservation
	}
	return ""
}

// DescribeCapacityReservations answers CapacityReservationIds (an unknown
// ID is InvalidCapacityReservationId.NotFound) and the filters state,
// owner-id, instance-type, availability-zone, instance-match-criteria,
// tag:<key> and tag-key, paginated with MaxResults 1..1000.
func (e *EC2) DescribeCapacityReservations(_ context.Context, in *ec2.DescribeCapacityReservationsInput, _ ...func(*ec2.Options)) (*ec2.DescribeCapacityReservationsOutput, error) {
	if err := e.enter("DescribeCapacityReservations"); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advanceReservations()
	for _, id := range in.CapacityReservationIds {
		if !slices.ContainsFunc(e.network.reservations, func(r ec2types.CapacityReservation) bool { return deref(r.CapacityReservationId) == id }) {
			return nil, APIError("InvalidCapacityReservationId.NotFound", fmt.Sprintf("The capacity reservation ID '%s' does not exist", id))
		}
	}
	var matched []ec2types.CapacityReservation
	for _, r := range e.network.reservations {
		if len(in.CapacityReservationIds) > 0 && !slices.Contains(in.CapacityReservationIds, deref(r.CapacityReservationId)) {
			continue
		}
		ok, err := matchFilters(in.Filters, reservationFields(r))
		if err != nil {
			return nil, err
		}
		if ok {
			matched = append(matched, r)
		}
	}
	out, next, err := page(matched, in.MaxResults, in.NextToken, 1, 1000)
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeCapacityReservationsOutput{CapacityReservations: slices.Clone(out), NextToken: next}, nil
}

func reservationFields(r ec2types.CapacityReservation) filterFields {
	return func(name string) ([]string, bool) {
		switch name {
		case "capacity-reservation-id":
			return []string{deref(r.CapacityReservationId)}, true
		case "state":
			return []string{string(r.State)}, true
		case "owner-id":
			return []string{deref(r.OwnerId)}, true
		case "instance-type":
			return []string{deref(r.InstanceType)}, true
		case "availability-zone":
			return []string{deref(r.AvailabilityZone)}, true
		case "instance-match-criteria":
			return []string{string(r.InstanceMatchCriteria)}, true
		case "reservation-type":
			return []string{string(r.ReservationType)}, true
		case "end-date":
			if r.EndDate == nil {
				return nil, true
			}
			return []string{r.EndDate.UTC().Format(time.RFC3339)}, true
		case "available-instance-count":
			return []string{strconv.Itoa(int(deref(r.AvailableInstanceCount)))}, true
		}
		return tagFields(r.Tags, name)
	}
}
