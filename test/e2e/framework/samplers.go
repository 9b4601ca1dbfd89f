package framework

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

// AvailabilitySampler counts, every 200 ms, the Available pods of a
// namespace carrying some labels, and keeps the fewest seen.
type AvailabilitySampler struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	samples int
	fewest  int
}

// SampleAvailable starts sampling the namespace's pods with labels (all
// of them when labels is nil); it stops at Stop or when the test ends.
func SampleAvailable(t testing.TB, cl client.Client, namespace string, labels map[string]string) *AvailabilitySampler {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &AvailabilitySampler{cancel: cancel, done: make(chan struct{}), fewest: 1 << 30}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			var list corev1.PodList
			if err := cl.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels(labels)); err == nil {
				n := CountAvailable(list.Items)
				s.mu.Lock()
				s.samples++
				s.fewest = min(s.fewest, n)
				s.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { s.Stop() })
	return s
}

// Stop ends sampling and returns the number of samples and the fewest
// available pods any of them saw.
func (s *AvailabilitySampler) Stop() (samples, fewest int) {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples, s.fewest
}

// DisruptionSampler records the most NodeClaims of a pool seen being
// disrupted at once: deleting, or held by a disruption command (condition
// DisruptionReason True, set with the karpenter.sh/disrupted taint). It
// watches NodeClaims rather than polling, so a node that goes faster than
// any poll interval is still seen: the NodeClaim's finalizer guarantees an
// update carrying its deletionTimestamp before it is removed.
type DisruptionSampler struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	peak   int
	seen   int
	events int
	err    error
}

// WatchDisrupting starts watching the pool's NodeClaims; when watched is
// not nil, only the NodeClaims it names count. It stops at Stop or when
// the test ends.
func WatchDisrupting(t testing.TB, f *Framework, pool string, watched map[string]bool) *DisruptionSampler {
	t.Helper()
	return watchDisrupting(t, f, pool, watched, false)
}

// WatchBudgetedDisrupting is WatchDisrupting counting only what disruption
// budgets count: a NodeClaim whose instance is already terminating
// (condition InstanceTerminating True, its node drained and gone) no longer
// consumes the budget, as upstream. With a cloud whose instances take a
// while to terminate, the next node may start while the previous
// NodeClaim waits for its instance.
func WatchBudgetedDisrupting(t testing.TB, f *Framework, pool string, watched map[string]bool) *DisruptionSampler {
	t.Helper()
	return watchDisrupting(t, f, pool, watched, true)
}

func watchDisrupting(t testing.TB, f *Framework, pool string, watched map[string]bool, budgeted bool) *DisruptionSampler {
	t.Helper()
	wc, err := client.NewWithWatch(f.Config, client.Options{Scheme: environment.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := wc.Watch(ctx, &karpv1.NodeClaimList{}, client.MatchingLabels{karpv1.NodePoolLabelKey: pool})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &DisruptionSampler{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer w.Stop()
		s.run(ctx, w, watched, budgeted)
	}()
	t.Cleanup(func() { s.Stop() })
	return s
}

func (s *DisruptionSampler) run(ctx context.Context, w watch.Interface, watched map[string]bool, budgeted bool) {
	disrupting := map[string]bool{}
	ever := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				s.mu.Lock()
				s.err = fmt.Errorf("the NodeClaim watch closed early")
				s.mu.Unlock()
				return
			}
			nc, isClaim := ev.Object.(*karpv1.NodeClaim)
			if !isClaim || (watched != nil && !watched[nc.Name]) {
				continue
			}
			switch {
			case ev.Type == watch.Deleted:
				delete(disrupting, nc.Name)
			case budgeted && nc.StatusConditions().IsTrue(karpv1.ConditionTypeInstanceTerminating):
				delete(disrupting, nc.Name)
				ever[nc.Name] = true
			case nc.DeletionTimestamp != nil || nc.StatusConditions().IsTrue(karpv1.ConditionTypeDisruptionReason):
				disrupting[nc.Name] = true
				ever[nc.Name] = true
			default:
				delete(disrupting, nc.Name)
			}
			s.mu.Lock()
			s.events++
			s.peak = max(s.peak, len(disrupting))
			s.seen = len(ever)
			s.mu.Unlock()
		}
	}
}

// Stop ends the watch and returns the most NodeClaims disrupted at once
// and how many distinct NodeClaims were ever seen disrupted.
func (s *DisruptionSampler) Stop() (peak, seen int) {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak, s.seen
}

// Events is how many NodeClaim events the sampler counted.
func (s *DisruptionSampler) Events() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events
}

// Err is why the watch ended early, if it did.
func (s *DisruptionSampler) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
