package fake

import (
	"sync"

	"github.com/aws/smithy-go"
)

// Faults makes named API calls fail. It is embedded by every fake and is
// safe for concurrent use.
type Faults struct {
	mu     sync.Mutex
	queued map[string][]error
	calls  map[string]int
}

// FailNext makes the next n calls of api (the SDK operation name, for
// example "CreateFleet") return err.
func (f *Faults) FailNext(api string, n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.queued == nil {
		f.queued = map[string][]error{}
	}
	for range n {
		f.queued[api] = append(f.queued[api], err)
	}
}

// Calls returns how many times api was called, failed calls included.
func (f *Faults) Calls(api string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[api]
}

// ResetCalls forgets the call counts (queued faults are kept).
func (f *Faults) ResetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

// enter counts a call of api and returns the fault queued for it, if any.
func (f *Faults) enter(api string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[api]++
	if q := f.queued[api]; len(q) > 0 {
		f.queued[api] = q[1:]
		return q[0]
	}
	return nil
}

// Throttling is the error AWS returns when a caller exceeds its request
// rate; the SDK's retryer treats the code as retryable.
func Throttling(api string) error {
	return &smithy.GenericAPIError{Code: "RequestLimitExceeded", Message: api + ": Request limit exceeded.", Fault: smithy.FaultClient}
}
