// Package faults holds the end-to-end tests of the fault primitives the
// chaos suite injects (component restarts and pauses, controller kills and
// pauses, a faulty network to the API server) and of karp's behaviour
// under them that a primitive alone shows: a paused leader hands over its
// Lease and, resumed, stops acting. The API server's audit log is on, so
// the requests of each controller replica (each its own user) can be
// counted.
package faults

import (
	"os"
	"testing"

	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

func TestMain(m *testing.M) {
	if err := os.Setenv(framework.AuditEnv, "1"); err != nil {
		panic(err)
	}
	os.Exit(framework.Run(m))
}
