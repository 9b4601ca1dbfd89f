package chaos

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// controllers are the run's two karp-controller replicas: the same
// command with the same --leader-election-name (StartKarp derives it from
// the test's name), so one leads and the other waits for the Lease. Both
// reach the API server through the run's fault proxy.
type controllers struct {
	t        *testing.T
	f        *framework.Framework
	replicas []*framework.Karp
}

func startControllers(t *testing.T, f *framework.Framework, kubeconfig string) *controllers {
	c := &controllers{t: t, f: f}
	args := append([]string{"--kubeconfig", kubeconfig}, framework.FastDisruptionArgs...)
	for range 2 {
		c.replicas = append(c.replicas, framework.StartKarp(t, f, args...))
	}
	return c
}

// leader is the replica that leads, asked through the Lease and the
// replicas' metrics; it waits up to a minute for one to lead (after a
// fault, the Lease may be between holders).
func (c *controllers) leader(ctx context.Context) (*framework.Karp, error) {
	var lastErr error
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		k, err := framework.Leader(ctx, c.f.Client, c.replicas...)
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

// kill SIGKILLs k and starts it again with the same command line plus
// extra.
func (c *controllers) kill(k *framework.Karp, extra ...string) error {
	if !k.Exited() {
		if err := k.Signal(syscall.SIGKILL); err != nil {
			return err
		}
		if !k.WaitExit(30 * time.Second) {
			return fmt.Errorf("karp pid %d did not exit on SIGKILL", k.PID())
		}
	}
	k.Restart(c.t, extra...)
	return nil
}

// restartExited starts again every replica whose process exited (a
// leader that lost its Lease exits on purpose) and returns how many.
func (c *controllers) restartExited() int {
	n := 0
	for _, k := range c.replicas {
		if k.Exited() {
			k.Restart(c.t)
			n++
		}
	}
	return n
}
