package hint

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Writer writes, in the background, the hints of pods a provisioning pass
// placed on nodes that exist, so the pass does not wait on pod status
// patches. It is bounded: at most one goroutine writes at a time (each
// write at most hintWorkers patches at once), and the hints queued while
// it writes are merged per pod, the latest node winning, into its next
// write. The goroutine works under the context of the Write that started
// it and stops when that context ends (the controller stopping), dropping
// what is queued: a missing hint only costs the scheduler's own placement.
type Writer struct {
	write func(context.Context, []Hint) int

	mu      sync.Mutex
	queued  map[types.UID]Hint
	order   []types.UID // queued pods, first queued first
	running bool
}

// NewWriter returns a Writer patching pods through kubeClient.
func NewWriter(kubeClient client.Client) *Writer {
	return newWriter(func(ctx context.Context, hints []Hint) int { return writeHints(ctx, kubeClient, hints) })
}

func newWriter(write func(context.Context, []Hint) int) *Writer {
	return &Writer{write: write, queued: map[types.UID]Hint{}}
}

// Write queues nodeName as the hint of each pod and starts the writer
// goroutine unless it runs. It never blocks on the API server.
func (w *Writer) Write(ctx context.Context, pods []*corev1.Pod, nodeName string) {
	if ctx.Err() != nil || len(pods) == 0 {
		return
	}
	w.mu.Lock()
	for _, pod := range pods {
		if _, ok := w.queued[pod.UID]; !ok {
			w.order = append(w.order, pod.UID)
		}
		w.queued[pod.UID] = Hint{Pod: pod, Node: nodeName}
	}
	start := !w.running
	w.running = true
	w.mu.Unlock()
	if start {
		go w.drain(ctx)
	}
}

// drain writes what is queued until nothing is, or ctx ends.
func (w *Writer) drain(ctx context.Context) {
	for {
		w.mu.Lock()
		if len(w.order) == 0 || ctx.Err() != nil {
			w.queued, w.order, w.running = map[types.UID]Hint{}, nil, false
			w.mu.Unlock()
			return
		}
		batch := make([]Hint, 0, len(w.order))
		for _, uid := range w.order {
			batch = append(batch, w.queued[uid])
		}
		w.queued, w.order = map[types.UID]Hint{}, nil
		w.mu.Unlock()
		w.write(ctx, batch)
	}
}

// busy reports whether the writer goroutine runs.
func (w *Writer) busy() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.running
}
