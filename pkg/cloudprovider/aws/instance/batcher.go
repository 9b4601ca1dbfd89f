package instance

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// batchResult is what one caller of a batch gets back.
type batchResult[R any] struct {
	value R
	err   error
}

// batchExec runs one batch: items in arrival order, one result per item.
type batchExec[T, R any] func(ctx context.Context, items []T) []batchResult[R]

// batcher coalesces calls that arrive close together into one execution
// per bucket. A bucket runs once no item has arrived for idle, once max has
// passed since its first item, or once it holds maxItems items. Buckets
// with different keys never mix, so only alike requests share a call.
type batcher[T, R any] struct {
	name     string
	clock    clock.WithTicker
	idle     time.Duration
	max      time.Duration
	maxItems int
	exec     batchExec[T, R]

	mu      sync.Mutex
	buckets map[string]*bucket[T, R]
}

type bucket[T, R any] struct {
	items   []T
	results []chan batchResult[R]
	arrived chan struct{} // signalled on every new item
	full    chan struct{} // closed when maxItems is reached
}

func newBatcher[T, R any](name string, clk clock.WithTicker, idle, maxWait time.Duration, maxItems int, exec batchExec[T, R]) *batcher[T, R] {
	return &batcher[T, R]{name: name, clock: clk, idle: idle, max: maxWait, maxItems: maxItems, exec: exec, buckets: map[string]*bucket[T, R]{}}
}

// Add puts item into the bucket key and waits for its batch's result.
func (b *batcher[T, R]) Add(ctx context.Context, key string, item T) (R, error) {
	result := make(chan batchResult[R], 1)
	b.mu.Lock()
	bk, ok := b.buckets[key]
	if !ok {
		bk = &bucket[T, R]{arrived: make(chan struct{}, 1), full: make(chan struct{})}
		b.buckets[key] = bk
		// The batch outlives the first caller's context: other callers
		// wait on it too.
		go b.run(context.WithoutCancel(ctx), key, bk)
	}
	bk.items = append(bk.items, item)
	bk.results = append(bk.results, result)
	if len(bk.items) >= b.maxItems {
		delete(b.buckets, key)
		close(bk.full)
	} else {
		select {
		case bk.arrived <- struct{}{}:
		default:
		}
	}
	b.mu.Unlock()
	select {
	case r := <-result:
		return r.value, r.err
	case <-ctx.Done():
		var zero R
		return zero, ctx.Err()
	}
}

// run waits out the bucket's window, then executes it and hands out the
// results.
func (b *batcher[T, R]) run(ctx context.Context, key string, bk *bucket[T, R]) {
	opened := b.clock.Now()
	maxTimer := b.clock.NewTimer(b.max)
	defer maxTimer.Stop()
	idleTimer := b.clock.NewTimer(b.idle)
	defer func() { idleTimer.Stop() }()
wait:
	for {
		select {
		case <-bk.full:
			break wait
		case <-maxTimer.C():
			break wait
		case <-idleTimer.C():
			break wait
		case <-bk.arrived:
			idleTimer.Stop()
			idleTimer = b.clock.NewTimer(b.idle)
		}
	}
	BatchTime.WithLabelValues(b.name).Observe(b.clock.Since(opened).Seconds())
	b.mu.Lock()
	if b.buckets[key] == bk {
		delete(b.buckets, key)
	}
	items, results := bk.items, bk.results
	b.mu.Unlock()
	BatchSize.WithLabelValues(b.name).Observe(float64(len(items)))
	out := b.exec(ctx, items)
	for i, ch := range results {
		ch <- out[i]
	}
}
