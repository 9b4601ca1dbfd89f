package kwok

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
)

func TestUnavailableOfferingsExpire(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	u := NewUnavailableOfferings(clk, time.Minute)
	a := cloudprovider.OfferingKey{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "spot"}
	b := cloudprovider.OfferingKey{InstanceType: "m5.large", Zone: "us-east-1b", CapacityType: "spot"}
	u.MarkUnavailable(a)
	clk.Step(30 * time.Second)
	u.MarkUnavailable(b)
	if !u.IsUnavailable(a) || !u.IsUnavailable(b) {
		t.Fatal("marked offerings are not unavailable")
	}
	clk.Step(30 * time.Second)
	if u.IsUnavailable(a) {
		t.Error("the first offering is still unavailable after its TTL")
	}
	if !u.IsUnavailable(b) {
		t.Error("the second offering expired early")
	}
	live, _, next := u.snapshot()
	if len(live) != 1 || !live[b] || !next.Equal(clk.Now().Add(30*time.Second)) {
		t.Errorf("snapshot = %v expiring %v", live, next)
	}
	u.Flush()
	if u.IsUnavailable(b) {
		t.Error("Flush kept an entry")
	}
}
