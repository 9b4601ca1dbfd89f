package disruption

import (
	"testing"
	"time"
)

func TestFailureBackoffDoublesUpToItsCap(t *testing.T) {
	for count, want := range map[int]time.Duration{
		1: 20 * time.Minute, 2: 40 * time.Minute, 3: 80 * time.Minute, 4: 160 * time.Minute,
		5: maxFailureBackoff, 100: maxFailureBackoff,
	} {
		if got := failureBackoff(10*time.Minute, count); got != want {
			t.Errorf("failureBackoff(10m, %d) = %s, want %s", count, got, want)
		}
	}
}
