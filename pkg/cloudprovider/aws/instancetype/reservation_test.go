package instancetype_test

import (
	"testing"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/capacityreservation"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instancetype"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// TestReservationCounts follows a reservation's count through launches:
// the reserved offering holds what the reservation has left and stops
// being usable when it is full, without waiting for the 5-minute cache.
func TestReservationCounts(t *testing.T) {
	e := newEnv(t, nil)
	e.ec2.AddCapacityReservations(fake.NewCapacityReservation("cr-0123", "m5.large", "us-west-2a", 2, nil))
	reservations := capacityreservation.NewProvider(e.ec2, e.clock)
	nc := nodeClass()
	nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: "cr-0123"}}
	found, err := reservations.List(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	nc.Status.CapacityReservations = capacityreservation.Status(found, e.clock.Now())
	provider := instancetype.NewProvider(e.ec2, e.prices, e.unavailable, reservations, instancetype.Options{Region: "us-west-2", VMMemoryOverheadPercent: 0.075}, e.clock)
	if err := provider.Update(t.Context()); err != nil {
		t.Fatal(err)
	}

	reserved := func() (holds int, cheapest string) {
		t.Helper()
		types, err := provider.List(t.Context(), nc)
		if err != nil {
			t.Fatal(err)
		}
		it := find(t, types, "m5.large")
		for _, o := range it.Offerings {
			if o.ReservationID == "cr-0123" {
				holds = o.ReservationCapacity
			}
		}
		if o, ok := it.CheapestOffering(scheduling.NewRequirements()); ok {
			cheapest = o.CapacityType
		}
		return holds, cheapest
	}
	if holds, cheapest := reserved(); holds != 2 || cheapest != scheduling.CapacityTypeRsv {
		t.Errorf("fresh reservation holds %d, cheapest %s; want 2 and reserved", holds, cheapest)
	}
	launchedAt := e.clock.Now().Add(1)
	e.clock.Step(2)
	reservations.MarkLaunched("cr-0123", launchedAt)
	if holds, _ := reserved(); holds != 1 {
		t.Errorf("after one launch the reservation holds %d, want 1", holds)
	}
	reservations.MarkLaunched("cr-0123", launchedAt)
	if holds, cheapest := reserved(); holds != 0 || cheapest == scheduling.CapacityTypeRsv {
		t.Errorf("full reservation holds %d, cheapest %s; want 0 and not reserved", holds, cheapest)
	}
	reservations.MarkTerminated("cr-0123")
	if holds, _ := reserved(); holds != 1 {
		t.Errorf("after a termination the reservation holds %d, want 1", holds)
	}
}
