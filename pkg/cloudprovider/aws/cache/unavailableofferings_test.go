package cache_test

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/cache"
)

func TestMarkAndExpire(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	u := cache.NewUnavailableOfferings(clk)
	ctx := t.Context()

	seq0 := u.SeqNum("m5.large")
	otherSeq0 := u.SeqNum("c5.large")
	u.MarkUnavailable(ctx, "InsufficientInstanceCapacity", "m5.large", "us-west-2a", "spot")
	for name, tc := range map[string]struct {
		instanceType, zone, capacityType string
		want                             bool
	}{
		"marked offering":     {"m5.large", "us-west-2a", "spot", true},
		"other capacity type": {"m5.large", "us-west-2a", "on-demand", false},
		"other zone":          {"m5.large", "us-west-2b", "spot", false},
		"other instance type": {"c5.large", "us-west-2a", "spot", false},
	} {
		if got := u.IsUnavailable(tc.instanceType, tc.zone, tc.capacityType); got != tc.want {
			t.Errorf("%s: unavailable = %v, want %v", name, got, tc.want)
		}
	}
	seq1 := u.SeqNum("m5.large")
	if seq1 == seq0 {
		t.Error("marking did not change the instance type's sequence number")
	}
	if u.SeqNum("c5.large") != otherSeq0 {
		t.Error("marking m5.large changed c5.large's sequence number")
	}

	clk.Step(2 * time.Minute)
	u.MarkUnavailable(ctx, "InsufficientInstanceCapacity", "m5.large", "us-west-2a", "spot") // extends the TTL
	clk.Step(2 * time.Minute)
	if !u.IsUnavailable("m5.large", "us-west-2a", "spot") {
		t.Error("a re-marked offering expired at its first TTL")
	}
	seq2 := u.SeqNum("m5.large")
	clk.Step(time.Minute)
	if u.IsUnavailable("m5.large", "us-west-2a", "spot") {
		t.Error("offering still unavailable after its TTL")
	}
	if u.SeqNum("m5.large") == seq2 {
		t.Error("expiry did not change the instance type's sequence number")
	}
}

func TestCapacityTypeAndSubnetMarks(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	u := cache.NewUnavailableOfferings(clk)
	ctx := t.Context()

	seq := u.SeqNum("m5.large")
	u.MarkCapacityTypeUnavailable(ctx, "AuthFailure.ServiceLinkedRoleCreationNotPermitted", "spot")
	if !u.IsUnavailable("m5.large", "us-west-2a", "spot") || !u.IsUnavailable("c5.large", "us-west-2c", "spot") {
		t.Error("spot offerings available after spot was marked")
	}
	if u.IsUnavailable("m5.large", "us-west-2a", "on-demand") {
		t.Error("on-demand unavailable after only spot was marked")
	}
	if u.SeqNum("m5.large") == seq {
		t.Error("a capacity-type mark did not change the sequence number")
	}

	u.MarkSubnetUnavailable(ctx, "InsufficientFreeAddressesInSubnet", "subnet-1")
	if !u.IsSubnetUnavailable("subnet-1") || u.IsSubnetUnavailable("subnet-2") {
		t.Error("subnet marks are wrong")
	}
	clk.Step(cache.UnavailableOfferingsTTL)
	if u.IsSubnetUnavailable("subnet-1") || u.IsUnavailable("m5.large", "us-west-2a", "spot") {
		t.Error("marks survived their TTL")
	}
}

func TestFlush(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	u := cache.NewUnavailableOfferings(clk)
	u.MarkUnavailable(t.Context(), "InsufficientInstanceCapacity", "m5.large", "us-west-2a", "on-demand")
	seq := u.SeqNum("m5.large")
	u.Flush()
	if u.IsUnavailable("m5.large", "us-west-2a", "on-demand") {
		t.Error("offering unavailable after Flush")
	}
	if u.SeqNum("m5.large") == seq {
		t.Error("Flush did not change the sequence number")
	}
}
