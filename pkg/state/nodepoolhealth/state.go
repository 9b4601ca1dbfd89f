package nodepoolhealth

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Outcome is what became of one NodeClaim of a NodePool: it registered
// (Success), or it failed to launch or register in time, with the reason
// and message the NodePool's condition shows when the failure makes it
// unhealthy.
type Outcome struct {
	Success         bool
	Reason, Message string
}

// Condition is the NodeRegistrationHealthy condition a NodePool should
// show. Status is StatusUnknown while nothing was recorded since the last
// reset: the writer then leaves the stored condition as it is.
type Condition struct {
	Status Status
	// Reason and Message explain StatusUnhealthy: the outcome that made
	// the pool unhealthy. Empty after a Seed.
	Reason, Message string
}

// pool is one NodePool's outcomes and the condition they led to.
type pool struct {
	tracker   Tracker
	condition Condition
	// resetFor is the spec the outcomes were last reset for.
	resetFor Generations
}

// Generations identifies the spec a NodePool's outcomes belong to: the
// NodePool's generation and its NodeClass's.
type Generations struct {
	NodePool, NodeClass int64
}

// State holds the outcomes and condition of each NodePool, by UID; safe
// for concurrent use. Recording is in memory only: one writer, the
// nodepool registrationhealth controller, copies Condition to the
// NodePool, so a burst of registrations costs a few API writes, not one
// per NodeClaim (and no conflicts between them).
type State struct {
	mu       sync.Mutex
	pools    map[types.UID]pool
	onChange func(nodePool string)
}

// NewState returns an empty State.
func NewState() *State { return &State{pools: map[types.UID]pool{}} }

// OnChange sets the function told the name of a NodePool whose Condition
// may have changed (the writer's enqueue). It is called outside the lock,
// after the change is visible to Condition.
func (s *State) OnChange(fn func(nodePool string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onChange = fn
}

// Status is the NodePool's current verdict.
func (s *State) Status(nodePool types.UID) Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pools[nodePool].tracker.Status()
}

// Condition is the NodeRegistrationHealthy condition the NodePool should
// show.
func (s *State) Condition(nodePool types.UID) Condition {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pools[nodePool].condition
}

// Record adds an outcome to the NodePool's tracker and moves its
// Condition as upstream Karpenter moves NodeRegistrationHealthy: to True
// when a registration leaves the pool healthy, to False (with the failing
// outcome's reason) when a failure makes it unhealthy and it is not False
// already. Any other outcome leaves the Condition as it was, so a first
// failure on a fresh pool keeps it Unknown. name is the NodePool's name,
// passed to the OnChange function.
func (s *State) Record(nodePool types.UID, name string, outcome Outcome) {
	s.mu.Lock()
	p := s.pools[nodePool]
	p.tracker.Record(outcome.Success)
	switch verdict := p.tracker.Status(); {
	case outcome.Success && verdict == StatusHealthy:
		p.condition = Condition{Status: StatusHealthy}
	case !outcome.Success && verdict == StatusUnhealthy && p.condition.Status != StatusUnhealthy:
		p.condition = Condition{Status: StatusUnhealthy, Reason: outcome.Reason, Message: outcome.Message}
	}
	s.pools[nodePool] = p
	notify := s.onChange
	s.mu.Unlock()
	if notify != nil {
		notify(name)
	}
}

// Seed fills an empty tracker so it agrees with a condition stored before
// the process started: Healthy as one success, Unhealthy as the failures
// the threshold needs. A tracker already holding outcomes is left alone.
func (s *State) Seed(nodePool types.UID, status Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pools[nodePool]
	if p.tracker.len > 0 {
		return
	}
	switch status {
	case StatusHealthy:
		p.tracker.Record(true)
	case StatusUnhealthy:
		for range int(BufferSize * ThresholdFalse) {
			p.tracker.Record(false)
		}
	default:
		return
	}
	p.condition = Condition{Status: status}
	s.pools[nodePool] = p
}

// Reset forgets the NodePool's outcomes (its spec or NodeClass changed),
// so its Condition is Unknown again, unless they were reset for these
// generations already: a writer reading a NodePool older than its own
// last write (a cache behind the API server) must not forget what was
// recorded since.
func (s *State) Reset(nodePool types.UID, generations Generations) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.pools[nodePool]; ok && p.resetFor == generations {
		return
	}
	s.pools[nodePool] = pool{resetFor: generations}
}
