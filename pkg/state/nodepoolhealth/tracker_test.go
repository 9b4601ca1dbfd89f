package nodepoolhealth

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestTrackerStatus(t *testing.T) {
	const ok, fail = true, false
	cases := []struct {
		name     string
		outcomes []bool
		want     Status
	}{
		{"nothing recorded", nil, StatusUnknown},
		{"one success", []bool{ok}, StatusHealthy},
		{"one failure is a quarter of the buffer", []bool{fail}, StatusHealthy},
		{"two failures reach the threshold", []bool{fail, fail}, StatusUnhealthy},
		{"two failures among four", []bool{ok, fail, ok, fail}, StatusUnhealthy},
		{"one failure among four", []bool{ok, ok, fail, ok}, StatusHealthy},
		{"old failures roll out", []bool{fail, fail, fail, fail, ok, ok, ok}, StatusHealthy},
		{"a success after four failures is not enough", []bool{fail, fail, fail, fail, ok}, StatusUnhealthy},
		{"two successes after failures still at the threshold", []bool{fail, fail, fail, fail, ok, ok}, StatusUnhealthy},
		{"recent failures push successes out", []bool{ok, ok, ok, ok, fail, fail}, StatusUnhealthy},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var tr Tracker
			for _, o := range tc.outcomes {
				tr.Record(o)
			}
			if got := tr.Status(); got != tc.want {
				t.Errorf("Status() = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestStatePerNodePool(t *testing.T) {
	a, b := types.UID("a"), types.UID("b")
	s := NewState()
	if got := s.StatusWith(a, false); got != StatusHealthy {
		t.Errorf("StatusWith(one failure) = %s, want Healthy", got)
	}
	if got := s.Status(a); got != StatusUnknown {
		t.Errorf("StatusWith recorded: Status = %s, want Unknown", got)
	}
	s.Record(a, false)
	if got := s.StatusWith(a, false); got != StatusUnhealthy {
		t.Errorf("StatusWith(second failure) = %s, want Unhealthy", got)
	}
	s.Record(a, false)
	if got := s.Status(b); got != StatusUnknown {
		t.Errorf("another pool's failures leaked: %s", got)
	}
	s.Reset(a)
	if got := s.Status(a); got != StatusUnknown {
		t.Errorf("after Reset: %s, want Unknown", got)
	}
}

func TestSeed(t *testing.T) {
	cases := []struct {
		name   string
		seed   Status
		then   bool
		wantAs Status
	}{
		{"unhealthy stays unhealthy after one success", StatusUnhealthy, true, StatusUnhealthy},
		{"healthy stays healthy after one failure", StatusHealthy, false, StatusHealthy},
		{"unknown seeds nothing", StatusUnknown, false, StatusHealthy},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewState()
			s.Seed("p", tc.seed)
			if got := s.Status("p"); got != tc.seed {
				t.Errorf("after Seed: %s, want %s", got, tc.seed)
			}
			s.Record("p", tc.then)
			if got := s.Status("p"); got != tc.wantAs {
				t.Errorf("after Seed and Record(%t): %s, want %s", tc.then, got, tc.wantAs)
			}
		})
	}
	s := NewState()
	s.Record("p", true)
	s.Seed("p", StatusUnhealthy)
	if got := s.Status("p"); got != StatusHealthy {
		t.Errorf("Seed overwrote recorded outcomes: %s", got)
	}
}
