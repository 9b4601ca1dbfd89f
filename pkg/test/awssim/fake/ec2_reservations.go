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
// cancelled); it reports whether the reservation exists.
func (e *EC2) SetCapacityReservationState(id string, state ec2types.CapacityReservationState) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range e.network.reservations {
		if deref(e.network.reservations[i].CapacityReservationId) == id {
			e.network.reservations[i].State = state
			return true
		}
	}
	return false
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
