package provisioning

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Batcher collects provisioning triggers into windows: the first trigger
// opens a window, which closes after IdleDuration without a new trigger or
// after MaxDuration in total. Triggers are deduplicated by UID within a
// window, so one pod's repeated updates do not keep it open, and a UID
// the previous window already had can open a window but not extend one:
// pods that stay pending re-trigger every few seconds, and hundreds of
// them arriving one by one would otherwise hold every window open to
// MaxDuration while newly pending pods wait.
type Batcher struct {
	clock        clock.Clock
	idleDuration time.Duration
	maxDuration  time.Duration
	triggers     chan types.UID
	// previous is the UIDs of the last window that closed; only Wait
	// touches it.
	previous map[types.UID]bool
	// waiting, when set, is called each time Wait is about to block with
	// its timers armed, with the number of triggers still queued. It is
	// the tests' sync point: once Wait waits with nothing queued, it has
	// taken in every trigger and a fake clock can be stepped.
	waiting func(queued int)
}

// NewBatcher returns a Batcher with the given window durations.
func NewBatcher(clk clock.Clock, idle, maxDuration time.Duration) *Batcher {
	return &Batcher{clock: clk, idleDuration: idle, maxDuration: maxDuration, triggers: make(chan types.UID, 1000)}
}

// Trigger asks for a provisioning pass on behalf of the object with the
// UID. It never blocks: when the buffer is full a window is certainly open
// or about to open.
func (b *Batcher) Trigger(uid types.UID) {
	select {
	case b.triggers <- uid:
	default:
	}
}

// Wait blocks until a window closes and returns true, or returns false
// when no trigger arrived within one idle duration (the caller comes back)
// or the context ended first. A trigger that arrives after the window ran
// out (the timer fired but Wait has not seen it yet) does not extend it.
func (b *Batcher) Wait(ctx context.Context) bool {
	var first types.UID
	noTrigger := b.clock.NewTimer(b.idleDuration)
	defer noTrigger.Stop()
	b.block()
	select {
	case first = <-b.triggers:
	case <-noTrigger.C():
		return false
	case <-ctx.Done():
		return false
	}
	seen := map[types.UID]bool{first: true}
	defer func() { b.previous = seen }()
	start := b.clock.Now()
	maxEnd, idleEnd := start.Add(b.maxDuration), start.Add(b.idleDuration)
	maxTimer := b.clock.NewTimer(b.maxDuration)
	defer maxTimer.Stop()
	idleTimer := b.clock.NewTimer(b.idleDuration)
	defer func() { idleTimer.Stop() }()
	for {
		b.block()
		select {
		case uid := <-b.triggers:
			now := b.clock.Now()
			if !now.Before(idleEnd) || !now.Before(maxEnd) {
				// The window ran out before this trigger came: it
				// opens the next one, as it would have had Wait seen
				// the timer first.
				b.Trigger(uid)
				return true
			}
			if seen[uid] {
				continue
			}
			seen[uid] = true
			if b.previous[uid] {
				continue
			}
			idleTimer.Stop()
			idleEnd = now.Add(b.idleDuration)
			idleTimer = b.clock.NewTimer(b.idleDuration)
		case <-idleTimer.C():
			return true
		case <-maxTimer.C():
			return true
		case <-ctx.Done():
			return true
		}
	}
}

// block tells the test hook, if any, that Wait is about to block.
func (b *Batcher) block() {
	if b.waiting != nil {
		b.waiting(len(b.triggers))
	}
}

// Pending is how many triggers wait to be read.
func (b *Batcher) Pending() int { return len(b.triggers) }
