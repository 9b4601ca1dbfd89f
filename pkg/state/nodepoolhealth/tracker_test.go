package nodepoolhealth

import (
	"testing"
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
