package provisioning_test

import (
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
	// patience bounds each wait for the batcher's goroutine, which is
	// only scheduled late on a loaded machine.
	patience = 30 * time.Second
)

// batcherHarness drives a Batcher on a fake clock in lockstep with the
// goroutine running its Wait: the batcher reports each time it is about
// to block, and the test moves the clock or triggers only then.
type batcherHarness struct {
	t   *testing.T
	clk *clocktesting.FakeClock
	b   *provisioning.Batcher
	// blocked receives the number of queued triggers each time Wait is
	// about to block.
	blocked chan int
	// done receives Wait's result.
	done chan bool
}

func newBatcherHarness(t *testing.T) *batcherHarness {
	h := &batcherHarness{t: t, clk: clocktesting.NewFakeClock(time.Unix(0, 0)), blocked: make(chan int)}
	h.b = provisioning.NewBatcher(h.clk, idle, maxWait)
	ctx := t.Context()
	provisioning.SetBatcherWaitingHook(h.b, func(queued int) {
		select {
		case h.blocked <- queued:
		case <-ctx.Done():
		}
	})
	return h
}

// wait starts Wait in the background and returns once it blocks with
// every trigger so far taken in.
func (h *batcherHarness) wait() {
	h.t.Helper()
	h.done = make(chan bool, 1)
	go func() { h.done <- h.b.Wait(h.t.Context()) }()
	h.settle()
}

// settle returns once Wait blocks with no trigger queued; it fails the
// test when Wait returns instead.
func (h *batcherHarness) settle() {
	h.t.Helper()
	for {
		select {
		case queued := <-h.blocked:
			if queued == 0 {
				return
			}
		case got := <-h.done:
			h.t.Fatalf("Wait returned %v while the test expected it to wait", got)
		case <-time.After(patience):
			h.t.Fatal("Wait neither blocked nor returned")
		}
	}
}

// trigger triggers uid and returns once Wait has taken it in.
func (h *batcherHarness) trigger(uid types.UID) {
	h.t.Helper()
	h.b.Trigger(uid)
	h.settle()
}

// expectOpen asserts that the window is still open at the clock's time.
// The sync point is a trigger Wait has already seen: Wait takes it (a
// trigger changes nothing in the window) and blocks again if the window
// is open, or returns if it ran out, whichever timer or trigger it sees
// first.
func (h *batcherHarness) expectOpen(seen types.UID, why string) {
	h.t.Helper()
	h.b.Trigger(seen)
	select {
	case queued := <-h.blocked:
		if queued != 0 {
			h.t.Fatalf("%d triggers queued after the sync point", queued)
		}
	case <-h.done:
		h.t.Fatal(why)
	case <-time.After(patience):
		h.t.Fatal("Wait neither blocked nor returned")
	}
}

// result returns what Wait returned.
func (h *batcherHarness) result() bool {
	h.t.Helper()
	for {
		select {
		case got := <-h.done:
			return got
		case <-h.blocked:
			// A trigger taken on the way out; Wait must still return.
		case <-time.After(patience):
			h.t.Fatal("Wait did not return")
		}
	}
}

func TestBatcherReturnsFalseWithoutTrigger(t *testing.T) {
	h := newBatcherHarness(t)
	h.wait()
	h.clk.Step(idle)
	if h.result() {
		t.Error("Wait returned true without a trigger")
	}
}

func TestBatcherClosesAfterIdle(t *testing.T) {
	h := newBatcherHarness(t)
	h.b.Trigger("a")
	h.wait()
	h.clk.Step(idle / 2)
	h.expectOpen("a", "window closed before the idle duration")
	h.clk.Step(idle / 2)
	if !h.result() {
		t.Error("Wait returned false after a trigger")
	}
}

func TestBatcherNewTriggerExtendsWindowButNotPastMax(t *testing.T) {
	h := newBatcherHarness(t)
	h.b.Trigger("first")
	h.wait()
	// A new pod every 900ms keeps the window open until the maximum.
	start := h.clk.Now()
	for i := 0; h.clk.Since(start)+900*time.Millisecond < maxWait; i++ {
		h.clk.Step(900 * time.Millisecond)
		h.expectOpen("first", fmt.Sprintf("window closed after %v of steady triggers, want it open until %v", h.clk.Since(start), maxWait))
		h.trigger(types.UID(fmt.Sprintf("pod-%d", i)))
	}
	// The next step passes the maximum: the window closes although the
	// last trigger was less than the idle duration ago.
	h.clk.Step(900 * time.Millisecond)
	if !h.result() {
		t.Error("Wait returned false")
	}
}

func TestBatcherDeduplicatesTriggers(t *testing.T) {
	h := newBatcherHarness(t)
	h.b.Trigger("same")
	h.wait()
	h.clk.Step(900 * time.Millisecond)
	// The same pod again does not restart the idle timer.
	h.trigger("same")
	h.clk.Step(100 * time.Millisecond)
	if !h.result() {
		t.Error("Wait returned false")
	}
}

// TestBatcherPreviousWindowTriggersDoNotExtend: pods still pending from
// the last window re-trigger, which may open a window but must not hold it
// open; a pod new to the batcher still extends it.
func TestBatcherPreviousWindowTriggersDoNotExtend(t *testing.T) {
	h := newBatcherHarness(t)
	h.b.Trigger("old-1")
	h.b.Trigger("old-2")
	h.wait()
	h.clk.Step(idle)
	if !h.result() {
		t.Fatal("first window: Wait returned false")
	}

	// The second window opens on an old pod; another old pod 900ms later
	// does not restart the idle timer, so the window closes at 1s.
	h.b.Trigger("old-1")
	h.wait()
	h.clk.Step(900 * time.Millisecond)
	h.trigger("old-2")
	h.clk.Step(100 * time.Millisecond)
	if !h.result() {
		t.Fatal("second window: Wait returned false")
	}

	// A new pod does restart it: 900ms + 900ms without closing.
	h.b.Trigger("old-1")
	h.wait()
	h.clk.Step(900 * time.Millisecond)
	h.trigger("new")
	h.clk.Step(900 * time.Millisecond)
	h.expectOpen("old-1", "a new pod's trigger did not extend the window")
	h.clk.Step(100 * time.Millisecond)
	if !h.result() {
		t.Fatal("third window: Wait returned false")
	}
}

// TestBatcherTriggerAfterTheWindowRanOutOpensTheNext: a trigger that
// reaches Wait after the window's time is up (Wait sees it before the
// fired timer) closes the window rather than extending it, and opens the
// next window.
func TestBatcherTriggerAfterTheWindowRanOutOpensTheNext(t *testing.T) {
	h := newBatcherHarness(t)
	h.b.Trigger("a")
	h.wait()
	h.clk.Step(idle)
	h.b.Trigger("late")
	if !h.result() {
		t.Fatal("first window: Wait returned false")
	}
	// The late trigger is still there for the next window.
	h.wait()
	h.clk.Step(idle)
	if !h.result() {
		t.Error("second window: Wait returned false, want the late trigger to open it")
	}
}
