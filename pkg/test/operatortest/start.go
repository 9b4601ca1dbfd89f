package operatortest

import (
	"context"
	"testing"
)

// StartUntilCleanup starts r (a manager, or karp's operator) in the
// background and stops it when the test ends, waiting for it to return: a
// cleanup the test registered before this call runs after it stopped.
func StartUntilCleanup(t *testing.T, r interface{ Start(context.Context) error }) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Logf("stopped: %v", err)
		}
	})
}
