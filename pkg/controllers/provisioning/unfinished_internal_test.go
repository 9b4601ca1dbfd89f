package provisioning

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestUnfinishedWorkGrowsWhileASolveRunsAndGoesWithIt(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p := &Provisioner{clock: clk}
	id := newSchedulingID()
	stop := p.trackUnfinishedWork(id, clk.Now())
	gauge := unfinishedWorkVec.WithLabelValues(provisionerName, id)

	// Three periods pass while the solve runs: the gauge follows the
	// clock (the update happens on the tracker's goroutine).
	for i := 1; i <= 3; i++ {
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		clk.Step(unfinishedWorkPeriod)
		want := float64(i) * unfinishedWorkPeriod.Seconds()
		for tries := 0; testutil.ToFloat64(gauge) != want; tries++ {
			if tries > 5000 {
				t.Fatalf("after %d periods: unfinished_work_seconds = %v, want %v", i, testutil.ToFloat64(gauge), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	stop()
	if n := testutil.CollectAndCount(unfinishedWorkVec); n != 0 {
		t.Errorf("%d unfinished_work_seconds series after the solve, want 0", n)
	}
}

func TestQueueDepthKeepsOnlyTheLatestPass(t *testing.T) {
	setQueueDepth("first", 4)
	setQueueDepth("second", 2)
	if n := testutil.CollectAndCount(queueDepthVec); n != 1 {
		t.Fatalf("%d queue_depth series, want 1", n)
	}
	if got := testutil.ToFloat64(queueDepthVec.WithLabelValues(provisionerName, "second")); got != 2 {
		t.Errorf("queue_depth{scheduling_id=second} = %v, want 2", got)
	}
}
