package framework

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// FastDisruptionArgs are controller flags that make the disruption loop
// act within seconds instead of upstream's 10s poll and 15s validation.
var FastDisruptionArgs = []string{"--disruption-poll-period=1s", "--disruption-validation-delay=1s"}

// built is a binary built once per test binary.
type built struct {
	once sync.Once
	path string
	err  error
}

// get builds the package on first use (see Build).
func (b *built) get(t testing.TB, pkg, name string) string {
	t.Helper()
	b.once.Do(func() { b.path, b.err = Build(pkg, name) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// PrebuiltEnv names a directory holding karp's binaries built for this
// test run (make e2e sets it to bin/ after `make build`): Build takes a
// binary from there instead of linking it again in every e2e package.
const PrebuiltEnv = "KARP_E2E_PREBUILT_DIR"

// Build returns the path of the package's binary named name: the one in
// $KARP_E2E_PREBUILT_DIR when that is set and holds it, else one built now
// into a fresh temporary directory of its own, which the caller may remove
// (see Temporary).
func Build(pkg, name string) (string, error) {
	if dir := os.Getenv(PrebuiltEnv); dir != "" {
		path := filepath.Join(dir, name)
		if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
			return path, nil
		}
	}
	dir, err := os.MkdirTemp("", "karp-e2e-bin-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	if out, err := exec.Command("go", "build", "-o", path, pkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %w\n%s", name, err, out)
	}
	return path, nil
}

// RemoveBuilt removes a binary Build linked into a temporary directory,
// with the directory; a prebuilt one (in $KARP_E2E_PREBUILT_DIR, the
// repository's bin/) is left alone.
func RemoveBuilt(path string) {
	if path == "" {
		return
	}
	dir := filepath.Dir(path)
	if pre := os.Getenv(PrebuiltEnv); pre != "" && filepath.Clean(pre) == dir {
		return
	}
	if !strings.HasPrefix(filepath.Base(dir), "karp-e2e-bin-") {
		return
	}
	_ = os.RemoveAll(dir)
}

var karpBin, controllerBin built

// Karp is a karp-controller process (the same controller as `karp
// controller`, built from cmd/karp-controller). Restart runs the same
// command again once it has exited, appending to the same log.
type Karp struct {
	bin  string
	args []string
	env  []string
	log  string
	// MetricsPort serves the controller's metrics on 127.0.0.1 (Leader
	// reads leader_election_master_status there).
	MetricsPort int
	// LeaseNamespace and LeaseName name its leader-election Lease
	// (kube-system, karp's default outside a cluster, unless
	// --leader-election-namespace says otherwise).
	LeaseNamespace, LeaseName string

	// failedAt is the log's length when the failed test's clean-up
	// began: what the controller did before its teardown.
	failedAt atomic.Int64

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// Log returns the controller's output so far.
func (k *Karp) Log() string {
	out, _ := os.ReadFile(k.log)
	return string(out)
}

// Exited reports whether the controller process has exited.
func (k *Karp) Exited() bool {
	select {
	case <-k.exitedChan():
		return true
	default:
		return false
	}
}

// PID is the process id of the current (or last) controller process.
func (k *Karp) PID() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cmd.Process.Pid
}

func (k *Karp) exitedChan() chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.exited
}

// noteFailure records the log's length at a failure, once.
func (k *Karp) noteFailure() {
	if st, err := os.Stat(k.log); err == nil {
		k.failedAt.CompareAndSwap(0, st.Size())
	}
}

// StartKarp builds karp-controller once per test binary and runs it
// (kwok provider) against the local cluster with short batching windows,
// metrics on a free port, its own leader-election lease (named after the
// test, so two StartKarp calls in one test are two replicas of one
// controller) and extraArgs (later flags win). It is interrupted when the
// test ends, or earlier with Stop; when the test failed, the tail of its
// log is printed and the log kept (always kept when KARP_E2E_KEEP_LOGS is
// set).
func StartKarp(t testing.TB, f *Framework, extraArgs ...string) *Karp {
	t.Helper()
	return StartKarpEnv(t, f, nil, extraArgs...)
}

// StartKarpEnv is StartKarp with env added to the controller's
// environment (KEY=value entries, later ones win): for the AWS provider,
// the simulated AWS's endpoint, region and credentials.
func StartKarpEnv(t testing.TB, f *Framework, env []string, extraArgs ...string) *Karp {
	t.Helper()
	bin := ControllerBinary(t)
	logFile, err := os.CreateTemp("", "karp-e2e-controller-*.log")
	if err != nil {
		t.Fatal(err)
	}
	_ = logFile.Close()
	port, err := metricsPort()
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--kubeconfig", f.Cluster.Kubeconfig, "--metrics-port=" + strconv.Itoa(port), "--health-probe-port=0",
		"--leader-election-name=karp-e2e-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")),
		"--batch-max-duration=2s", "--batch-idle-duration=500ms"}, extraArgs...)
	k := &Karp{bin: bin, args: args, log: logFile.Name(), MetricsPort: intFlag(args, "metrics-port"),
		LeaseNamespace: cmp.Or(stringFlag(args, "leader-election-namespace"), LeaseNamespace), LeaseName: stringFlag(args, "leader-election-name")}
	if len(env) > 0 {
		k.env = append(os.Environ(), env...)
	}
	if err := k.start(args); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// On a failure, the cluster's state and the controller's log up
		// to now: what it did before the test gave up, not its shutdown.
		if t.Failed() {
			DumpCluster(t, f.Client)
			k.noteFailure()
		}
		k.Stop(os.Interrupt)
		if os.Getenv("KARP_E2E_KEEP_LOGS") != "" {
			t.Logf("karp controller log kept in %s", k.log)
			return
		}
		if !t.Failed() {
			_ = os.Remove(k.log)
			return
		}
		out, _ := os.ReadFile(k.log)
		if n := k.failedAt.Load(); n > 0 && n <= int64(len(out)) {
			out = out[:n]
		}
		t.Logf("karp controller log kept in %s; its last 12000 bytes when the test failed:\n%s", k.log, tail(out, 12000))
	})
	return k
}

// start runs the controller with args, its output appended to the log.
func (k *Karp) start(args []string) error {
	logFile, err := os.OpenFile(k.log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(k.bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = k.env
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = logFile.Close(); close(exited) }()
	k.mu.Lock()
	k.cmd, k.exited = cmd, exited
	k.mu.Unlock()
	return nil
}

// Restart starts the controller again with the same command line, plus
// extraArgs for this run only (later flags win: for example
// --kwok-insufficient-capacity on a restarted replica). The previous
// process must have exited (Stop or Signal(SIGKILL) first).
func (k *Karp) Restart(t testing.TB, extraArgs ...string) {
	t.Helper()
	if !k.Exited() {
		t.Fatalf("restarting karp: pid %d is still running", k.PID())
	}
	if err := k.start(append(append([]string(nil), k.args...), extraArgs...)); err != nil {
		t.Fatalf("restarting karp: %v", err)
	}
}

// Signal sends sig to the controller process: SIGKILL kills it (Restart
// starts it again), SIGSTOP freezes it (it keeps its connections but does
// nothing, renewing no lease) and SIGCONT resumes it. Signalling an exited
// controller is an error.
func (k *Karp) Signal(sig os.Signal) error {
	if k.Exited() {
		return fmt.Errorf("signalling karp: pid %d has exited", k.PID())
	}
	k.mu.Lock()
	p := k.cmd.Process
	k.mu.Unlock()
	if err := p.Signal(sig); err != nil {
		return fmt.Errorf("signalling karp pid %d: %w", p.Pid, err)
	}
	return nil
}

// WaitExit waits up to timeout for the controller to exit and reports
// whether it did.
func (k *Karp) WaitExit(timeout time.Duration) bool {
	select {
	case <-k.exitedChan():
		return true
	case <-time.After(timeout):
		return false
	}
}

// KarpBinary builds the karp CLI once per test binary and returns its
// path, for tests that run its other subcommands (karp interrupt).
func KarpBinary(t testing.TB) string {
	t.Helper()
	return karpBin.get(t, "github.com/karp-autoscaler/karp/cmd/karp", "karp")
}

// ControllerBinary builds karp-controller once per test binary and returns
// its path.
func ControllerBinary(t testing.TB) string {
	t.Helper()
	return controllerBin.get(t, "github.com/karp-autoscaler/karp/cmd/karp-controller", "karp-controller")
}

// Stop sends sig to the controller and waits for it to exit, killing it
// after 30 seconds; a stopped (SIGSTOP) controller is resumed so it sees
// the signal. Stopping an exited controller does nothing.
func (k *Karp) Stop(sig os.Signal) {
	exited := k.exitedChan()
	select {
	case <-exited:
		return
	default:
	}
	k.mu.Lock()
	p := k.cmd.Process
	k.mu.Unlock()
	_ = p.Signal(sig)
	_ = p.Signal(syscall.SIGCONT)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = p.Kill()
		<-exited
	}
}

func tail(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return b[len(b)-n:]
}
