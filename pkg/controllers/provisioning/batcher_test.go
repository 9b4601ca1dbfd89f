package provisioning_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning"
)

const (
	idle    = time.Second
	maxWait = 10 * time.Second
)

// waitAsync runs Wait in the background and returns its result channel.
func waitAsync(b *provisioning.Batcher) <-chan bool {
	done := make(chan bool, 1)
	go func() { done <- b.Wait(context.Background()) }()
	return done
}

// stepWhenWaiting advances the fake clock once Wait has armed its timers.
func stepWhenWaiting(t *testing.T, clk *clocktesting.FakeClock, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the batcher never waited on the clock")
		}
		time.Sleep(time.Millisecond)
	}
	clk.Step(d)
}

func result(t *testing.T, done <-chan bool) bool {
	t.Helper()
	select {
	case got := <-done:
		return got
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return")
	}
	return false
}

func TestBatcherReturnsFalseWithoutTrigger(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := provisioning.NewBatcher(clk, idle, maxWait)
	done := waitAsync(b)
	stepWhenWaiting(t, clk, idle)
	if result(t, done) {
		t.Error("Wait returned true without a trigger")
	}
}

func TestBatcherClosesAfterIdle(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := provisioning.NewBatcher(clk, idle, maxWait)
	b.Trigger("a")
	done := waitAsync(b)
	stepWhenWaiting(t, clk, idle/2)
	select {
	case <-done:
		t.Fatal("window closed before the idle duration")
	default:
	}
	clk.Step(idle / 2)
	if !result(t, done) {
		t.Error("Wait returned false after a trigger")
	}
}

func TestBatcherNewTriggerExtendsWindowButNotPastMax(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := provisioning.NewBatcher(clk, idle, maxWait)
	b.Trigger("first")
	done := waitAsync(b)
	// A new pod every 900ms keeps the window open until the maximum.
	start := clk.Now()
	for i := 0; clk.Since(start)+900*time.Millisecond < maxWait; i++ {
		stepWhenWaiting(t, clk, 900*time.Millisecond)
		time.Sleep(5 * time.Millisecond)
		select {
		case <-done:
			t.Fatalf("window closed after %v of steady triggers, want it open until %v", clk.Since(start), maxWait)
		default:
		}
		b.Trigger(types.UID(fmt.Sprintf("pod-%d", i)))
		waitDrained(t, b)
	}
	// The next step passes the maximum: the window closes although the
	// last trigger was less than the idle duration ago.
	clk.Step(900 * time.Millisecond)
	if !result(t, done) {
		t.Error("Wait returned false")
	}
}

func TestBatcherDeduplicatesTriggers(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := provisioning.NewBatcher(clk, idle, maxWait)
	b.Trigger("same")
	done := waitAsync(b)
	stepWhenWaiting(t, clk, 900*time.Millisecond)
	// The same pod again does not restart the idle timer.
	b.Trigger("same")
	waitDrained(t, b)
	clk.Step(100 * time.Millisecond)
	if !result(t, done) {
		t.Error("Wait returned false")
	}
}

// waitDrained gives the batcher's goroutine a moment to take the trigger
// off its channel before the clock moves again.
func waitDrained(t *testing.T, b *provisioning.Batcher) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for b.Pending() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("trigger never consumed")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(5 * time.Millisecond)
}

// TestBatcherPreviousWindowTriggersDoNotExtend: pods still pending from
// the last window re-trigger, which may open a window but must not hold it
// open; a pod new to the batcher still extends it.
func TestBatcherPreviousWindowTriggersDoNotExtend(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := provisioning.NewBatcher(clk, idle, maxWait)
	b.Trigger("old-1")
	b.Trigger("old-2")
	done := waitAsync(b)
	stepWhenWaiting(t, clk, idle)
	if !result(t, done) {
		t.Fatal("first window: Wait returned false")
	}

	// The second window opens on an old pod; another old pod 900ms later
	// does not restart the idle timer, so the window closes at 1s.
	b.Trigger("old-1")
	done = waitAsync(b)
	stepWhenWaiting(t, clk, 900*time.Millisecond)
	b.Trigger("old-2")
	waitDrained(t, b)
	clk.Step(100 * time.Millisecond)
	if !result(t, done) {
		t.Fatal("second window: Wait returned false")
	}

	// A new pod does restart it: 900ms + 900ms without closing.
	b.Trigger("old-1")
	done = waitAsync(b)
	stepWhenWaiting(t, clk, 900*time.Millisecond)
	b.Trigger("new")
	waitDrained(t, b)
	clk.Step(900 * time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("a new pod's trigger did not extend the window")
	default:
	}
	clk.Step(100 * time.Millisecond)
	if !result(t, done) {
		t.Fatal("third window: Wait returned false")
	}
}
