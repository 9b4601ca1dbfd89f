package hint

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// blockingWrite is a write function that records every call and holds
// each until released.
type blockingWrite struct {
	mu               sync.Mutex
	calls            [][]Hint
	inFlight, most   int
	release, entered chan struct{}
}

func newBlockingWrite() *blockingWrite {
	return &blockingWrite{release: make(chan struct{}), entered: make(chan struct{}, 100)}
}

func (b *blockingWrite) write(ctx context.Context, hints []Hint) int {
	b.mu.Lock()
	b.calls = append(b.calls, hints)
	b.inFlight++
	b.most = max(b.most, b.inFlight)
	b.mu.Unlock()
	b.entered <- struct{}{}
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	b.mu.Lock()
	b.inFlight--
	b.mu.Unlock()
	return len(hints)
}

func (b *blockingWrite) snapshot() (calls [][]Hint, most int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([][]Hint(nil), b.calls...), b.most
}

func hintPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)}}
}

// waitFor polls cond (real time, bounded) until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 2000; i++ {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestWriterWritesOneBatchAtATime checks the hints of many passes do not
// start a goroutine each: one write runs at a time, and the hints queued
// meanwhile are merged per pod (the latest node wins) into the next write.
func TestWriterWritesOneBatchAtATime(t *testing.T) {
	b := newBlockingWrite()
	w := newWriter(b.write)
	ctx := t.Context()
	w.Write(ctx, []*corev1.Pod{hintPod("first")}, "node-0")
	<-b.entered
	for i := 0; i < 200; i++ {
		w.Write(ctx, []*corev1.Pod{hintPod(fmt.Sprintf("p-%d", i%50))}, fmt.Sprintf("node-%d", i))
	}
	close(b.release)
	waitFor(t, "the writer to go idle", func() bool { return !w.busy() })
	calls, most := b.snapshot()
	if most != 1 {
		t.Errorf("%d writes ran at once, want 1", most)
	}
	if len(calls) != 2 {
		t.Fatalf("%d writes, want 2 (the first, then everything queued meanwhile)", len(calls))
	}
	if got := len(calls[1]); got != 50 {
		t.Errorf("the second write holds %d hints, want 50 (one per pod)", got)
	}
	for _, h := range calls[1] {
		if h.Pod.Name == "p-0" && h.Node != "node-150" {
			t.Errorf("pod p-0 hinted with %s, want the latest node-150", h.Node)
		}
	}
}

// TestWriterStopsWithItsContext checks a stopped controller leaves no
// writer behind: the running write sees the cancellation, what is queued
// is dropped, and nothing is written after.
func TestWriterStopsWithItsContext(t *testing.T) {
	b := newBlockingWrite()
	w := newWriter(b.write)
	ctx, cancel := context.WithCancel(t.Context())
	w.Write(ctx, []*corev1.Pod{hintPod("a")}, "node-a")
	<-b.entered
	w.Write(ctx, []*corev1.Pod{hintPod("b")}, "node-b")
	cancel()
	waitFor(t, "the writer to stop", func() bool { return !w.busy() })
	w.Write(ctx, []*corev1.Pod{hintPod("c")}, "node-c")
	if w.busy() {
		t.Error("a write with a cancelled context started a writer")
	}
	if calls, _ := b.snapshot(); len(calls) != 1 {
		t.Errorf("%d writes, want 1 (the one cancelled)", len(calls))
	}
}
