package nodepoolhealth

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

var (
	ok      = Outcome{Success: true}
	timeout = Outcome{Reason: "RegistrationFailed", Message: "Failed to register node"}
	noCap   = Outcome{Reason: "InsufficientCapacity", Message: "no capacity"}
)

func TestConditionFollowsUpstreamTransitions(t *testing.T) {
	cases := map[string]struct {
		outcomes []Outcome
		want     Condition
	}{
		"nothing recorded":                  {nil, Condition{}},
		"a registration":                    {[]Outcome{ok}, Condition{Status: StatusHealthy}},
		"one failure on a fresh pool stays": {[]Outcome{timeout}, Condition{}},
		"the failure reaching the threshold": {[]Outcome{noCap, timeout},
			Condition{Status: StatusUnhealthy, Reason: timeout.Reason, Message: timeout.Message}},
		"later failures keep the first reason": {[]Outcome{timeout, timeout, noCap},
			Condition{Status: StatusUnhealthy, Reason: timeout.Reason, Message: timeout.Message}},
		"a failure while healthy stays healthy": {[]Outcome{ok, timeout}, Condition{Status: StatusHealthy}},
		"registrations while unhealthy stay false": {[]Outcome{timeout, timeout, ok, ok},
			Condition{Status: StatusUnhealthy, Reason: timeout.Reason, Message: timeout.Message}},
		"healthy once one failure is left": {[]Outcome{timeout, timeout, ok, ok, ok}, Condition{Status: StatusHealthy}},
		"unhealthy again with the new reason": {[]Outcome{timeout, timeout, ok, ok, ok, ok, noCap, noCap},
			Condition{Status: StatusUnhealthy, Reason: noCap.Reason, Message: noCap.Message}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewState()
			for _, o := range tc.outcomes {
				s.Record("p", "pool", o)
			}
			if diff := cmp.Diff(tc.want, s.Condition("p")); diff != "" {
				t.Errorf("Condition (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestStatePerNodePool(t *testing.T) {
	a, b := types.UID("a"), types.UID("b")
	s := NewState()
	s.Record(a, "a", timeout)
	s.Record(a, "a", timeout)
	if got := s.Status(a); got != StatusUnhealthy {
		t.Errorf("after two failures: %s, want Unhealthy", got)
	}
	if got := s.Status(b); got != StatusUnknown {
		t.Errorf("another pool's failures leaked: %s", got)
	}
	s.Reset(a, Generations{NodePool: 1, NodeClass: 1})
	if got, want := s.Condition(a), (Condition{}); got != want || s.Status(a) != StatusUnknown {
		t.Errorf("after Reset: %+v/%s, want Unknown", got, s.Status(a))
	}
}

// TestResetOncePerSpec: a second Reset for the same generations (a
// writer reading a copy older than its own reset) keeps the outcomes
// recorded since the first; a Reset for a new spec forgets them.
func TestResetOncePerSpec(t *testing.T) {
	s := NewState()
	first := Generations{NodePool: 1, NodeClass: 1}
	s.Reset("p", first)
	s.Record("p", "pool", timeout)
	s.Record("p", "pool", timeout)
	s.Reset("p", first)
	if got := s.Condition("p"); got.Status != StatusUnhealthy {
		t.Errorf("after a second Reset for the same spec: %+v, want Unhealthy kept", got)
	}
	s.Reset("p", Generations{NodePool: 2, NodeClass: 1})
	if got := s.Condition("p"); got.Status != StatusUnknown || s.Status("p") != StatusUnknown {
		t.Errorf("after a Reset for a new NodePool generation: %+v/%s, want Unknown", got, s.Status("p"))
	}
	s.Record("p", "pool", timeout)
	s.Record("p", "pool", timeout)
	s.Reset("p", Generations{NodePool: 2, NodeClass: 2})
	if got := s.Condition("p"); got.Status != StatusUnknown {
		t.Errorf("after a Reset for a new NodeClass generation: %+v, want Unknown", got)
	}
}

// TestConcurrentRecordsAreNotLost records outcomes of many NodeClaims at
// once, as the lifecycle's workers do in a scale-out: every outcome is
// counted and the writer is told about each.
func TestConcurrentRecordsAreNotLost(t *testing.T) {
	const n = 200
	s := NewState()
	var mu sync.Mutex
	told := map[string]int{}
	s.OnChange(func(name string) {
		mu.Lock()
		defer mu.Unlock()
		told[name]++
	})
	s.Seed("p", StatusUnhealthy)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			pool, uid := "p", types.UID("p")
			if i%2 == 1 {
				pool, uid = "q", "q"
			}
			s.Record(uid, pool, ok)
		})
	}
	wg.Wait()
	if diff := cmp.Diff(map[string]int{"p": n / 2, "q": n / 2}, told); diff != "" {
		t.Errorf("OnChange calls per pool (-want,+got):\n%s", diff)
	}
	for _, uid := range []types.UID{"p", "q"} {
		if got := s.Condition(uid); got.Status != StatusHealthy {
			t.Errorf("pool %s after %d registrations: %+v, want Healthy", uid, n/2, got)
		}
	}
	// The ring holds the last BufferSize outcomes: all successes.
	s.Record("p", "p", timeout)
	if got := s.Status("p"); got != StatusHealthy {
		t.Errorf("one failure after the registrations: %s, want Healthy (earlier failures rolled out)", got)
	}
}

func TestSeed(t *testing.T) {
	cases := map[string]struct {
		seed          Status
		then          Outcome
		wantStatus    Status
		wantCondition Status
	}{
		"unhealthy stays unhealthy after one success": {StatusUnhealthy, ok, StatusUnhealthy, StatusUnhealthy},
		"healthy stays healthy after one failure":     {StatusHealthy, timeout, StatusHealthy, StatusHealthy},
		"unknown seeds nothing":                       {StatusUnknown, timeout, StatusHealthy, StatusUnknown},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewState()
			s.Seed("p", tc.seed)
			if got := s.Status("p"); got != tc.seed {
				t.Errorf("after Seed: %s, want %s", got, tc.seed)
			}
			s.Record("p", "p", tc.then)
			if got := s.Status("p"); got != tc.wantStatus {
				t.Errorf("after Seed and Record: %s, want %s", got, tc.wantStatus)
			}
			if got := s.Condition("p").Status; got != tc.wantCondition {
				t.Errorf("condition after Seed and Record: %s, want %s", got, tc.wantCondition)
			}
		})
	}
	s := NewState()
	s.Record("p", "p", ok)
	s.Seed("p", StatusUnhealthy)
	if got := s.Status("p"); got != StatusHealthy {
		t.Errorf("Seed overwrote recorded outcomes: %s", got)
	}
}
