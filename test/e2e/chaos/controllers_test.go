package chaos

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// controllers are the run's two karp-controller replicas: the same
// command with the same --leader-election-name (StartKarp derives it from
// the test's name), so one leads and the other waits for the Lease. Both
// reach the API server through the run's fault proxy. Like a kubelet with
// restartPolicy Always, a supervisor starts again any replica that exits
// on its own (a leader that cannot renew its Lease exits on purpose).
type controllers struct {
	t        *testing.T
	f        *framework.Framework
	replicas []*framework.Karp
	// mu serialises the faults' kills and restarts with the supervisor's.
	mu sync.Mutex
	// exits counts the replicas the supervisor found exited.
	exits int
}

func startControllers(t *testing.T, f *framework.Framework, kubeconfig string) *controllers {
	c := &controllers{t: t, f: f}
	args := append([]string{"--kubeconfig", kubeconfig}, framework.FastDisruptionArgs...)
	for range 2 {
		c.replicas = append(c.replicas, framework.StartKarp(t, f, args...))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.supervise(ctx)
	}()
	// Registered after StartKarp's own clean-ups, so it runs before them:
	// nothing restarts a replica the test is stopping.
	t.Cleanup(func() { cancel(); <-done })
	return c
}

// supervise restarts exited replicas every second until ctx is done.
func (c *controllers) supervise(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		c.mu.Lock()
		for _, k := range c.replicas {
			if k.Exited() {
				c.exits++
				k.Restart(c.t)
			}
		}
		c.mu.Unlock()
	}
}

// restarts is how many times the supervisor restarted a replica that
// exited on its own.
func (c *controllers) restarts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exits
}

// leader is the replica that leads, asked through the Lease and the
// replicas' metrics; it waits up to a minute for one to lead (after a
// fault, the Lease may be between holders).
func (c *controllers) leader(ctx context.Context) (*framework.Karp, error) {
	var lastErr error
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		k, err := framework.Leader(ctx, c.f.Client, c.replicas...)
		c.mu.Unlock()
		if err == nil {
			return k, nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("no leader within a minute: %w", lastErr)
}

// standby is the replica that is not k.
func (c *controllers) standby(k *framework.Karp) *framework.Karp {
	if c.replicas[0] == k {
		return c.replicas[1]
	}
	return c.replicas[0]
}

// kill SIGKILLs the replicas and starts them again with the same command
// line plus extra.
func (c *controllers) kill(extra []string, replicas ...*framework.Karp) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range replicas {
		if k.Exited() {
			continue
		}
		if err := k.Signal(syscall.SIGKILL); err != nil {
			return err
		}
		if !k.WaitExit(30 * time.Second) {
			return fmt.Errorf("karp pid %d did not exit on SIGKILL", k.PID())
		}
	}
	for _, k := range replicas {
		k.Restart(c.t, extra...)
	}
	return nil
}

// freeze SIGSTOPs k for d, then SIGCONTs it. The supervisor restarts it
// if it then exits.
func (c *controllers) freeze(ctx context.Context, k *framework.Karp, d time.Duration) error {
	if err := k.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	err := sleep(ctx, d)
	if cerr := k.Signal(syscall.SIGCONT); cerr != nil {
		return cerr
	}
	return err
}
