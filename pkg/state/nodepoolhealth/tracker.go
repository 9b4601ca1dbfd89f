package nodepoolhealth

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
