package nodepoolhealth

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

const (
	// BufferSize is how many recent outcomes a NodePool's tracker keeps.
	BufferSize = 4
	// ThresholdFalse is the share of BufferSize that failed outcomes must
	// reach for the NodePool to be unhealthy.
	ThresholdFalse = 0.5
)

// Status is the verdict for NodeRegistrationHealthy.
type Status int

const (
	// StatusUnknown: no outcome recorded since the last reset.
	StatusUnknown Status = iota
	// StatusHealthy: failures are below the threshold.
	StatusHealthy
	// StatusUnhealthy: failures reach the threshold.
	StatusUnhealthy
)

func (s Status) String() string {
	switch s {
	case StatusHealthy:
		return "Healthy"
	case StatusUnhealthy:
		return "Unhealthy"
	default:
		return "Unknown"
	}
}

// Tracker is a ring buffer of the last BufferSize outcomes (true: the
// NodeClaim registered; false: it failed to launch or register).
type Tracker struct {
	outcomes [BufferSize]bool
	len      int
	next     int
}

// Record adds an outcome, dropping the oldest when full.
func (t *Tracker) Record(success bool) {
	t.outcomes[t.next] = success
	t.next = (t.next + 1) % BufferSize
	t.len = min(t.len+1, BufferSize)
}

// Status is Unknown when empty, Unhealthy when the failures make up at
// least ThresholdFalse of BufferSize (not of the outcomes held: two
// failures are enough on a fresh NodePool), else Healthy.
func (t Tracker) Status() Status {
	if t.len == 0 {
		return StatusUnknown
	}
	failures := 0
	for i := range t.len {
		if !t.outcomes[i] {
			failures++
		}
	}
	if float64(failures)/BufferSize >= ThresholdFalse {
		return StatusUnhealthy
	}
	return StatusHealthy
}

// State holds a Tracker per NodePool UID; safe for concurrent use.
type State struct {
	mu       sync.Mutex
	trackers map[types.UID]Tracker
}

// NewState returns an empty State.
func NewState() *State { return &State{trackers: map[types.UID]Tracker{}} }

// Status is the NodePool's current verdict.
func (s *State) Status(nodePool types.UID) Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.trackers[nodePool].Status()
}

// StatusWith is the verdict the NodePool would have after recording the
// outcome, without recording it.
func (s *State) StatusWith(nodePool types.UID, success bool) Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.trackers[nodePool]
	t.Record(success)
	return t.Status()
}

// Record adds an outcome to the NodePool's tracker.
func (s *State) Record(nodePool types.UID, success bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.trackers[nodePool]
	t.Record(success)
	s.trackers[nodePool] = t
}

// Seed fills an empty tracker so it agrees with a condition stored before
// the process started: Healthy as one success, Unhealthy as the failures
// the threshold needs. A tracker already holding outcomes is left alone.
func (s *State) Seed(nodePool types.UID, status Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.trackers[nodePool]
	if t.len > 0 {
		return
	}
	switch status {
	case StatusHealthy:
		t.Record(true)
	case StatusUnhealthy:
		for range int(BufferSize * ThresholdFalse) {
			t.Record(false)
		}
	default:
		return
	}
	s.trackers[nodePool] = t
}

// Reset forgets the NodePool's outcomes (its spec or NodeClass changed).
func (s *State) Reset(nodePool types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.trackers, nodePool)
}
