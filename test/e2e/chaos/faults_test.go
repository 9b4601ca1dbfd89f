package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"time"
)

// faultKind is one kind of fault the run can inject.
type faultKind struct {
	name string
	// inject causes the fault and undoes it (restarts what it killed,
	// continues what it stopped) before it returns.
	inject func(ctx context.Context) error
}

// injected is one fault the run caused.
type injected struct {
	kind, phase string
	at          time.Time
	took        time.Duration
	err         error
}

// injector causes faults at moments its seeded RNG picks. The choices of
// a phase are all drawn before its first fault, so a run with the same
// seed injects the same faults at the same offsets into each phase.
type injector struct {
	// logf reports each fault as it ends.
	logf  func(format string, args ...any)
	rng   *rand.Rand
	kinds []faultKind
	mu    sync.Mutex
	log   []injected
}

func newInjector(seed int64, kinds []faultKind, logf func(format string, args ...any)) *injector {
	return &injector{rng: rand.New(rand.NewSource(seed)), kinds: kinds, logf: logf}
}

// during draws n faults at offsets within window from now and injects them
// in order in the background; the returned channel closes after the last.
func (inj *injector) during(ctx context.Context, phase string, n int, window time.Duration) <-chan struct{} {
	type planned struct {
		kind   faultKind
		offset time.Duration
	}
	plan := make([]planned, n)
	for i := range plan {
		plan[i] = planned{kind: inj.kinds[inj.rng.Intn(len(inj.kinds))], offset: time.Duration(inj.rng.Int63n(int64(window)))}
	}
	sort.Slice(plan, func(i, j int) bool { return plan[i].offset < plan[j].offset })
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, p := range plan {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(start.Add(p.offset))):
			}
			at := time.Now()
			err := p.kind.inject(ctx)
			inj.logf("fault %s in %s at %s, took %s, error %v", p.kind.name, phase, at.UTC().Format("15:04:05"), time.Since(at).Round(time.Second), err)
			inj.mu.Lock()
			inj.log = append(inj.log, injected{kind: p.kind.name, phase: phase, at: at, took: time.Since(at), err: err})
			inj.mu.Unlock()
		}
	}()
	return done
}

// injected returns the faults caused so far.
func (inj *injector) injected() []injected {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	return append([]injected(nil), inj.log...)
}

// lastEnd is when the last fault was undone (zero before any).
func (inj *injector) lastEnd() time.Time {
	var last time.Time
	for _, f := range inj.injected() {
		if end := f.at.Add(f.took); end.After(last) {
			last = end
		}
	}
	return last
}

// byKind counts the faults by kind, as "kind=n" sorted by kind.
func (inj *injector) byKind() string {
	counts := map[string]int{}
	for _, f := range inj.injected() {
		counts[f.kind]++
	}
	var out []string
	for _, k := range inj.kinds {
		out = append(out, fmt.Sprintf("%s=%d", k.name, counts[k.name]))
	}
	return strings.Join(out, " ")
}
