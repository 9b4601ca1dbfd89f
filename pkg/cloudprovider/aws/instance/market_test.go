package instance

import (
	"fmt"
	"testing"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/clock"
)

// TestFleetMarketFollowsTheReservation pins the CreateFleet fields that
// depend on what a launch buys (upstream's): a capacity block is its own
// target capacity type with no allocation strategy, an interruptible
// reservation is reserved-capacity limited to interruptible reservations,
// and any other reservation is on-demand capacity.
func TestFleetMarketFollowsTheReservation(t *testing.T) {
	type fleet struct {
		Target        ec2types.DefaultTargetCapacityType
		OnDemand      ec2types.FleetOnDemandAllocationStrategy
		Spot          ec2types.SpotAllocationStrategy
		ReservedTypes []ec2types.FleetReservationType
	}
	for name, tc := range map[string]struct {
		capacityType, reservationType string
		interruptible                 bool
		want                          fleet
	}{
		"on-demand": {capacityType: "on-demand", want: fleet{Target: "on-demand", OnDemand: "lowest-price"}},
		"spot":      {capacityType: "spot", want: fleet{Target: "spot", Spot: "price-capacity-optimized"}},
		"an on-demand capacity reservation": {capacityType: "reserved", reservationType: "default",
			want: fleet{Target: "on-demand", OnDemand: "lowest-price"}},
		"an interruptible reservation": {capacityType: "reserved", reservationType: "default", interruptible: true,
			want: fleet{Target: "reserved-capacity", ReservedTypes: []ec2types.FleetReservationType{"interruptible-capacity-reservation"}}},
		"a capacity block": {capacityType: "reserved", reservationType: "capacity-block",
			want: fleet{Target: "capacity-block"}},
	} {
		t.Run(name, func(t *testing.T) {
			e := newFakeEC2(t)
			p := NewProvider(e, clock.RealClock{}, "test-cluster", nil)
			req := request(fmt.Sprintf("nc-%s", tc.capacityType), tc.capacityType)
			if tc.capacityType == "reserved" {
				req.ReservationID, req.ReservationType, req.ReservationInterruptible = "cr-1", tc.reservationType, tc.interruptible
			}
			inst, err := p.Create(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if inst.CapacityType != tc.capacityType || inst.ReservationID != req.ReservationID {
				t.Errorf("instance capacity type %q in %q, want %q in %q", inst.CapacityType, inst.ReservationID, tc.capacityType, req.ReservationID)
			}
			inputs := e.CreateFleetInputs()
			if len(inputs) != 1 {
				t.Fatalf("%d CreateFleet calls, want 1", len(inputs))
			}
			in := inputs[0]
			got := fleet{Target: in.TargetCapacitySpecification.DefaultTargetCapacityType}
			if in.OnDemandOptions != nil {
				got.OnDemand = in.OnDemandOptions.AllocationStrategy
			}
			if in.SpotOptions != nil {
				got.Spot = in.SpotOptions.AllocationStrategy
			}
			if in.ReservedCapacityOptions != nil {
				got.ReservedTypes = in.ReservedCapacityOptions.ReservationTypes
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("fleet (-want,+got)\n%s", diff)
			}
		})
	}
}
