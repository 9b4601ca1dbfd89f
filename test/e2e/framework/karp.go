package framework

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

// get builds the package into a fresh temporary directory on first use.
func (b *built) get(t testing.TB, pkg, name string) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "karp-e2e-bin-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, name)
		if out, err := exec.Command("go", "build", "-o", b.path, pkg).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("building %s: %w\n%s", name, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

var karpBin, controllerBin built

// Karp is a running karp-controller process (the same controller as `karp
// controller`, built from cmd/karp-controller).
type Karp struct {
	cmd    *exec.Cmd
	exited chan struct{}
	log    string
}

// Log returns the controller's output so far.
func (k *Karp) Log() string {
	out, _ := os.ReadFile(k.log)
	return string(out)
}

// Exited reports whether the controller process has exited.
func (k *Karp) Exited() bool {
	select {
	case <-k.exited:
		return true
	default:
		return false
	}
}

// StartKarp builds karp-controller once per test binary and runs it
// (kwok provider) against the local cluster with short batching windows,
// its own leader-election lease and extraArgs (later flags win). It is
// interrupted when the test ends, or earlier with Stop; when the test
// failed, the tail of its log is printed and the log kept (always kept
// when KARP_E2E_KEEP_LOGS is set).
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
	args := append([]string{"--kubeconfig", f.Cluster.Kubeconfig, "--metrics-port=0", "--health-probe-port=0",
		"--leader-election-name=karp-e2e-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")),
		"--batch-max-duration=2s", "--batch-idle-duration=500ms"}, extraArgs...)
	k := &Karp{cmd: exec.Command(bin, args...), exited: make(chan struct{}), log: logFile.Name()}
	k.cmd.Stdout, k.cmd.Stderr = logFile, logFile
	if len(env) > 0 {
		k.cmd.Env = append(os.Environ(), env...)
	}
	if err := k.cmd.Start(); err != nil {
		_ = logFile.Close()
		t.Fatal(err)
	}
	go func() { _ = k.cmd.Wait(); _ = logFile.Close(); close(k.exited) }()
	t.Cleanup(func() {
		k.Stop(os.Interrupt)
		if os.Getenv("KARP_E2E_KEEP_LOGS") != "" {
			t.Logf("karp controller log kept in %s", k.log)
			return
		}
		if !t.Failed() {
			_ = os.Remove(k.log)
			return
		}
		if out, err := os.ReadFile(k.log); err == nil {
			t.Logf("karp controller log kept in %s; last 6000 bytes:\n%s", k.log, tail(out, 6000))
		}
	})
	return k
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
// after 30 seconds. Stopping an exited controller does nothing.
func (k *Karp) Stop(sig os.Signal) {
	select {
	case <-k.exited:
		return
	default:
	}
	_ = k.cmd.Process.Signal(sig)
	select {
	case <-k.exited:
	case <-time.After(30 * time.Second):
		_ = k.cmd.Process.Kill()
		<-k.exited
	}
}

func tail(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return b[len(b)-n:]
}
