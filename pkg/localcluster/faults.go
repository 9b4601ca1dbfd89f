package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"syscall"
)

// Faults on a running cluster, for the chaos tests: a component killed and
// started again (Restart) or paused and resumed (Signal). A deliberate
// restart is not a death: Died() stays quiet for it, while any exit nobody
// asked for is still reported.

// Restart kills the named component (SIGKILL to its process group, so it
// gets no chance to shut down cleanly), starts it again with the same
// arguments, ports and data, and returns once it is ready again: etcd
// answers /health and the API server's /readyz passes (its etcd check
// included), the API server's /readyz passes, or the scheduler,
// controller-manager or kwok answer /healthz. Restarts of one cluster are
// serialised. ctx bounds the wait (Options.Timeout when ctx has no
// deadline).
func (c *Cluster) Restart(ctx context.Context, component string) error {
	if !slices.Contains(componentOrder, component) {
		return fmt.Errorf("restarting %q: not a component (want one of %s)", component, strings.Join(componentOrder, ", "))
	}
	c.restartMu.Lock()
	defer c.restartMu.Unlock()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.Timeout)
		defer cancel()
	}
	old, err := c.retire(component)
	if err != nil {
		return err
	}
	// SIGKILL the whole group and wait for the exit, so the ports and the
	// etcd data directory are free before the new process starts.
	if err := killGroup(old.pid(), syscall.SIGKILL); err != nil {
		return fmt.Errorf("restarting %s: %w", component, err)
	}
	select {
	case <-old.done:
	case <-ctx.Done():
		return fmt.Errorf("restarting %s: waiting for pid %d to exit: %w", component, old.pid(), ctx.Err())
	}
	for _, comp := range renderComponents(c.layout, c.Ports) {
		if comp.name == component {
			if err := c.launch(comp); err != nil {
				return fmt.Errorf("restarting %s: %w", component, err)
			}
		}
	}
	return c.waitReady(ctx, component)
}

// retire marks the running process of component as deliberately stopped,
// so its exit is not reported on Died, and drops it from the process list
// and the state file (launch records its successor).
func (c *Cluster) retire(component string) (*process, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopping {
		return nil, fmt.Errorf("restarting %s: the cluster is stopping", component)
	}
	i := slices.IndexFunc(c.procs, func(p *process) bool { return p.name == component })
	if i < 0 {
		return nil, fmt.Errorf("restarting %s: not running", component)
	}
	old := c.procs[i]
	if old.exited() {
		return nil, fmt.Errorf("restarting %s: pid %d already exited unexpectedly: %w", component, old.pid(), old.exitError())
	}
	old.retired = true
	c.procs = slices.Delete(c.procs, i, i+1)
	c.state.Components = slices.DeleteFunc(c.state.Components, func(r ProcessRecord) bool { return r.Name == component })
	return old, nil
}

// waitReady waits until a freshly started component serves again.
func (c *Cluster) waitReady(ctx context.Context, component string) error {
	switch component {
	case Etcd:
		if err := c.poll(ctx, "etcd /health", func(ctx context.Context) (bool, error) {
			return httpOK(ctx, http.DefaultClient, "http://"+hostPort(c.Ports.EtcdClient)+"/health")
		}); err != nil {
			return err
		}
		// The API server reconnects on its own; it is usable again once
		// its readiness (which checks etcd) passes.
		return c.waitAPIServer(ctx)
	case APIServer:
		return c.waitAPIServer(ctx)
	default:
		return c.waitHealthz(ctx, component)
	}
}

// Signal sends sig to the named component's process group: SIGSTOP to
// freeze it (it keeps its sockets but answers nothing), SIGCONT to resume
// it. A component killed this way (SIGKILL, SIGTERM) is an unexpected
// death and is reported on Died; use Restart to kill and start one again.
func (c *Cluster) Signal(component string, sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("signalling %s: %v is not a syscall.Signal", component, sig)
	}
	c.mu.Lock()
	i := slices.IndexFunc(c.procs, func(p *process) bool { return p.name == component })
	var p *process
	if i >= 0 {
		p = c.procs[i]
	}
	c.mu.Unlock()
	if p == nil {
		return fmt.Errorf("signalling %q: not a running component (want one of %s)", component, strings.Join(componentOrder, ", "))
	}
	if p.exited() {
		return fmt.Errorf("signalling %s: pid %d has exited", component, p.pid())
	}
	if err := killGroup(p.pid(), s); err != nil {
		return fmt.Errorf("signalling %s: %w", component, err)
	}
	return nil
}

// PID returns the process id of the named component's running process (it
// changes with every Restart), or an error when none runs.
func (c *Cluster) PID(component string) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		if p.name == component && !p.exited() {
			return p.pid(), nil
		}
	}
	return 0, errors.New(component + " is not running")
}
