package test

import (
	"sync"
	"testing"
)

// DistinctConcurrently calls create(i) for every i in [0, n) at once and
// returns the IDs they returned, in order of i. It fails the test when a
// call fails or two calls return the same ID: a burst of launches must
// give every NodeClaim its own instance.
func DistinctConcurrently(t testing.TB, n int, create func(i int) (string, error)) []string {
	t.Helper()
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { ids[i], errs[i] = create(i) })
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("create %d: %v", i, errs[i])
		}
		if seen[ids[i]] {
			t.Errorf("%s returned for two of %d concurrent creates", ids[i], n)
		}
		seen[ids[i]] = true
	}
	return ids
}
