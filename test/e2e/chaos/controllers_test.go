package chaos

import (
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// controllers are the run's two karp-controller replicas: the same
// command with the same --leader-election-name (StartKarp derives it from
// the test's name), so one leads and the other waits for the Lease.
type controllers struct {
	t  *testing.T
	f  *framework.Framework
	mu sync.Mutex
	// replicas[i] is the process of slot i; args[i] its extra flags.
	replicas [2]*framework.Karp
	args     [2][]string
}

func startControllers(t *testing.T, f *framework.Framework) *controllers {
	c := &controllers{t: t, f: f}
	for i := range c.replicas {
		c.start(i)
	}
	return c
}

// start (re)starts slot i with the usual flags plus extra.
func (c *controllers) start(i int, extra ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.args[i] = append(append([]string(nil), framework.FastDisruptionArgs...), extra...)
	c.replicas[i] = framework.StartKarp(c.t, c.f, c.args[i]...)
}

// leader is the slot whose running process last said it acquired the
// Lease, else 0. A process that loses the Lease exits, so at most the
// newest acquirer is still running and leading.
func (c *controllers) leader() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, k := range c.replicas {
		if !k.Exited() && strings.Contains(strings.ToLower(k.Log()), "acquired lease") {
			return i
		}
	}
	return 0
}

// kill SIGKILLs slot i and starts it again with the same flags.
func (c *controllers) kill(i int) {
	c.mu.Lock()
	k, args := c.replicas[i], c.args[i]
	c.mu.Unlock()
	k.Stop(syscall.SIGKILL)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.replicas[i] = framework.StartKarp(c.t, c.f, args...)
}

// restartExited starts again every slot whose process exited (a leader
// that lost its Lease exits on purpose).
func (c *controllers) restartExited() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for i, k := range c.replicas {
		if k.Exited() {
			c.replicas[i] = framework.StartKarp(c.t, c.f, c.args[i]...)
			n++
		}
	}
	return n
}
