package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
)

// Options configure a local cluster.
type Options struct {
	// Dir is the cluster directory (PKI, kubeconfigs, logs, etcd data,
	// state). Default DefaultDir().
	Dir string
	// BinDir holds the etcd, kube-apiserver, kube-scheduler,
	// kube-controller-manager and kwok binaries.
	BinDir string
	// Timeout bounds start-up until the cluster is ready. Default 3m.
	Timeout time.Duration
	// Progress receives one line per start-up step; nil discards them.
	Progress io.Writer
	// Clock dates the generated certificates and times the kwok resync.
	// Default the real clock.
	Clock clock.PassiveClock
	// GOMAXPROCS, when positive, is the GOMAXPROCS every component runs
	// with; zero leaves them the machine's processors. Test suites that
	// run several clusters at once on a small machine set 1: each
	// cluster's garbage collectors and schedulers then do less work.
	GOMAXPROCS int
}

// DefaultDir is $HOME/.karp/local.
func DefaultDir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".karp", "local")
}

// stopGrace is how long a component gets between SIGTERM and SIGKILL.
const stopGrace = 10 * time.Second

// Cluster is a running local control plane supervised by this process.
type Cluster struct {
	// Dir is the cluster directory.
	Dir string
	// Kubeconfig is the admin (system:masters) kubeconfig path.
	Kubeconfig string
	// Config is the admin rest.Config.
	Config *rest.Config
	// Ports are the loopback ports in use.
	Ports Ports

	opts   Options
	layout layout
	died   chan error

	// restartMu serialises Restart calls.
	restartMu sync.Mutex
	// stopResync ends the kwok resync (startKWOKResync); nil until it runs.
	stopResync func()

	mu       sync.Mutex
	procs    []*process
	state    State
	stopping bool
	stopErr  error
	stopOnce sync.Once
}

// Start generates credentials, starts every component and waits until the
// control plane is ready and the karp CRDs are Established. On error
// nothing is left running.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Dir == "" {
		opts.Dir = DefaultDir()
	}
	if opts.Timeout == 0 {
		opts.Timeout = 3 * time.Minute
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("resolving cluster directory: %w", err)
	}
	opts.Dir = dir
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		c, err := start(ctx, opts)
		if err == nil || attempt == maxStartAttempts || !portClash(err) {
			return c, err
		}
		fmt.Fprintln(opts.Progress, "a port picked for the cluster was taken meanwhile; retrying with fresh ports")
	}
}

// maxStartAttempts bounds retries after a port clash.
const maxStartAttempts = 3

// portClash reports whether a component died because its port was taken
// between picking it and binding it (for example by another cluster's
// outgoing connection).
func portClash(err error) bool {
	var exit *ComponentExitError
	return errors.As(err, &exit) && strings.Contains(exit.LogTail, "address already in use")
}

// start makes one attempt at starting the cluster.
func start(ctx context.Context, opts Options) (*Cluster, error) {
	c := &Cluster{Dir: opts.Dir, opts: opts, layout: layout{opts.Dir}, died: make(chan error, 1)}
	c.Kubeconfig = c.layout.adminKubeconfig()
	if err := c.prepare(); err != nil {
		return nil, err
	}
	if err := c.startAll(ctx); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	if err := c.startKWOKResync(ctx); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	c.mu.Lock()
	c.state.Ready = true
	err := writeState(c.Dir, &c.state)
	c.mu.Unlock()
	if err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	return c, nil
}

// prepare checks the binaries, refuses to clobber a running cluster,
// clears what a previous cluster left and writes credentials and configs.
func (c *Cluster) prepare() error {
	for _, name := range componentOrder {
		if _, err := os.Stat(filepath.Join(c.opts.BinDir, name)); err != nil {
			return fmt.Errorf("control plane binary %s missing in %s (run `make tools`): %w", name, c.opts.BinDir, err)
		}
	}
	if s, err := ReadState(c.Dir); err == nil {
		if alive := s.Alive(); len(alive) > 0 {
			return fmt.Errorf("a local cluster is already running in %s (pid %d); run `karp down --dir %s` first", c.Dir, alive[0].PID, c.Dir)
		}
	} else if !errors.Is(err, ErrNotRunning) {
		return err
	}
	for _, stale := range []string{c.layout.etcdData(), c.layout.logDir(), c.layout.pkiDir(), filepath.Join(c.Dir, "serving"), c.layout.state()} {
		if err := os.RemoveAll(stale); err != nil {
			return fmt.Errorf("clearing %s: %w", stale, err)
		}
	}
	for _, d := range []string{c.Dir, c.layout.logDir(), c.layout.servingCertDir(Scheduler), c.layout.servingCertDir(ControllerManager)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
	}
	ports, err := freePorts()
	if err != nil {
		return err
	}
	c.Ports = ports
	c.state = State{Supervisor: recordProcess("supervisor", os.Getpid()), Ports: ports, Kubeconfig: c.Kubeconfig}
	return c.writeConfigs()
}

// writeConfigs writes the PKI, one kubeconfig per client and kwok's stages.
func (c *Cluster) writeConfigs() error {
	p, err := newPKI(c.opts.Clock.Now())
	if err != nil {
		return err
	}
	if err := p.writeTo(c.layout.pkiDir()); err != nil {
		return err
	}
	server := "https://" + hostPort(c.Ports.APIServer)
	kubeconfigs := map[string]struct {
		user string
		kp   *keyPair
	}{
		c.Kubeconfig:                           {adminUser, p.Admin},
		c.layout.kubeconfig(Scheduler):         {schedulerUser, p.Scheduler},
		c.layout.kubeconfig(ControllerManager): {controllerManagerUser, p.ControllerManager},
		c.layout.kubeconfig(KWOK):              {kwokUser, p.KWOK},
	}
	for path, kc := range kubeconfigs {
		raw, err := renderKubeconfig(server, p.CA.CertPEM, kc.user, kc.kp)
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	if err := os.WriteFile(c.layout.kwokConfig(), []byte(kwokStages), 0o644); err != nil {
		return fmt.Errorf("writing kwok stages: %w", err)
	}
	if err := os.WriteFile(c.layout.auditPolicy(), []byte(auditPolicy), 0o644); err != nil {
		return fmt.Errorf("writing the audit policy: %w", err)
	}
	c.Config, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return fmt.Errorf("loading admin kubeconfig: %w", err)
	}
	return nil
}

// startAll starts the components in order, waiting for each stage of
// readiness before the next, then installs the CRDs.
func (c *Cluster) startAll(ctx context.Context) error {
	byName := map[string]component{}
	for _, comp := range renderComponents(c.layout, c.Ports) {
		byName[comp.name] = comp
	}
	// 1. Storage and the API server.
	for _, name := range []string{Etcd, APIServer} {
		if err := c.launch(byName[name]); err != nil {
			return err
		}
	}
	if err := c.waitAPIServer(ctx); err != nil {
		return err
	}
	// 2. Everything that talks to the API server.
	for _, name := range []string{Scheduler, ControllerManager, KWOK} {
		if err := c.launch(byName[name]); err != nil {
			return err
		}
	}
	// 3. CRDs, then the components' own health and the default
	// ServiceAccount (which proves the controller-manager works).
	if err := c.installCRDs(ctx); err != nil {
		return err
	}
	return c.waitComponents(ctx)
}

// launch starts one component, records it and watches for its exit.
func (c *Cluster) launch(comp component) error {
	fmt.Fprintf(c.opts.Progress, "starting %s\n", comp.name)
	var env []string
	if c.opts.GOMAXPROCS > 0 {
		env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(c.opts.GOMAXPROCS))
	}
	p, err := startProcess(comp.name, filepath.Join(c.opts.BinDir, comp.name), comp.args, env, c.layout.log(comp.name))
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.stopping {
		// A Restart raced with Stop: Stop has already taken its list.
		c.mu.Unlock()
		p.stop(stopGrace)
		return fmt.Errorf("starting %s: the cluster is stopping", comp.name)
	}
	c.procs = append(c.procs, p)
	c.state.Components = append(c.state.Components, recordProcess(comp.name, p.pid()))
	err = writeState(c.Dir, &c.state)
	c.mu.Unlock()
	go c.watch(p)
	return err
}

// watch reports p's exit on Died unless the cluster is stopping or p was
// retired by a Restart.
func (c *Cluster) watch(p *process) {
	<-p.done
	c.mu.Lock()
	expected := c.stopping || p.retired
	c.mu.Unlock()
	if expected {
		return
	}
	select {
	case c.died <- p.exitError():
	default:
	}
}

// Died delivers the first component that exits while the cluster runs,
// as a *ComponentExitError carrying the tail of its log.
func (c *Cluster) Died() <-chan error { return c.died }

// Stop stops the components in reverse start order (SIGTERM, then SIGKILL
// after a grace period) and removes the state file. It is idempotent.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		if c.stopResync != nil {
			c.stopResync()
		}
		c.mu.Lock()
		c.stopping = true
		procs := append([]*process(nil), c.procs...)
		c.mu.Unlock()
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].stop(stopGrace)
		}
		var errs []error
		for _, p := range procs {
			if ProcessAlive(p.pid()) {
				errs = append(errs, fmt.Errorf("%s (pid %d) still running", p.name, p.pid()))
			}
		}
		if err := os.Remove(c.layout.state()); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing cluster state: %w", err))
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

// State returns a copy of what the cluster recorded in its state file.
func (c *Cluster) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.state
	s.Components = append([]ProcessRecord(nil), c.state.Components...)
	return s
}
