package cloudprovider

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestTypedErrorsAreFoundThroughWrapping(t *testing.T) {
	base := errors.New("boom")
	tests := map[string]struct {
		err    error
		is     func(error) bool
		ignore func(error) error
	}{
		"NodeClaimNotFound":    {NewNodeClaimNotFoundError(base), IsNodeClaimNotFoundError, IgnoreNodeClaimNotFoundError},
		"InsufficientCapacity": {NewInsufficientCapacityError(base), IsInsufficientCapacityError, IgnoreInsufficientCapacityError},
		"NodeClassNotReady":    {NewNodeClassNotReadyError(base), IsNodeClassNotReadyError, IgnoreNodeClassNotReadyError},
		"Create":               {NewCreateError(base, "Reason", "message"), IsCreateError, IgnoreCreateError},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			wrapped := fmt.Errorf("launching nodeclaim: %w", tc.err)
			if !tc.is(wrapped) {
				t.Errorf("predicate does not see the wrapped error %v", wrapped)
			}
			if got := tc.ignore(wrapped); got != nil {
				t.Errorf("Ignore returned %v, want nil", got)
			}
			if !errors.Is(wrapped, base) {
				t.Errorf("the cause is not reachable through Unwrap")
			}
			if tc.is(base) || tc.is(nil) {
				t.Errorf("predicate matches an unrelated error")
			}
			if got := tc.ignore(base); got != base { //nolint:errorlint // Ignore must return the very error it was given
				t.Errorf("Ignore(unrelated) = %v, want it unchanged", got)
			}
			for other, oc := range tests {
				if other != name && oc.is(tc.err) {
					t.Errorf("Is%sError matches a %s error", other, name)
				}
			}
		})
	}
}

func TestInsufficientCapacityErrorNamesRefusedOfferings(t *testing.T) {
	err := NewInsufficientCapacityError(errors.New("no capacity"),
		OfferingKey{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "spot"})
	var ice *InsufficientCapacityError
	if !errors.As(fmt.Errorf("wrapped: %w", err), &ice) {
		t.Fatal("errors.As found no InsufficientCapacityError")
	}
	if len(ice.Offerings) != 1 || ice.Offerings[0].InstanceType != "m5.large" {
		t.Errorf("offerings = %v", ice.Offerings)
	}
	if !strings.Contains(err.Error(), "m5.large/us-east-1a/spot") {
		t.Errorf("message %q does not name the refused offering", err)
	}
}

func TestCreateErrorCarriesConditionReason(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", NewCreateError(errors.New("quota"), "QuotaExceeded", "vCPU quota reached"))
	ce, ok := AsCreateError(err)
	if !ok {
		t.Fatal("AsCreateError found nothing")
	}
	if ce.ConditionReason != "QuotaExceeded" || ce.ConditionMessage != "vCPU quota reached" {
		t.Errorf("got reason %q message %q", ce.ConditionReason, ce.ConditionMessage)
	}
}
