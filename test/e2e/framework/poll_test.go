package framework

import (
	"context"
	"testing"
	"time"
)

func TestBackoffStartsFastAndSettlesAtOneSecond(t *testing.T) {
	for _, c := range []struct{ elapsed, want time.Duration }{
		{0, 250 * time.Millisecond},
		{900 * time.Millisecond, 250 * time.Millisecond},
		{2 * time.Second, 500 * time.Millisecond},
		{3 * time.Second, 750 * time.Millisecond},
		{10 * time.Second, time.Second},
		{time.Hour, time.Second},
	} {
		if got := backoff(c.elapsed); got != c.want {
			t.Errorf("backoff(%s) = %s, want %s", c.elapsed, got, c.want)
		}
	}
}

func TestPollChecksUntilTheConditionHolds(t *testing.T) {
	checks := 0
	poll(t, time.Minute, func(time.Duration) time.Duration { return time.Millisecond }, func(context.Context) (bool, string) {
		checks++
		return checks == 5, "not yet"
	})
	if checks != 5 {
		t.Fatalf("cond checked %d times, want 5 (it held on the fifth)", checks)
	}
}
