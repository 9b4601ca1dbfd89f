package provisioning_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// iceOffering is the offering the controller is told has no capacity
// (TestInsufficientSpotCapacityFallsBack); no other test can pick it.
const iceOffering = "m5.2xlarge/us-east-1b/spot"

// The one karp controller process the suite runs against.
var (
	controllerMu   sync.Mutex
	controllerCmd  *exec.Cmd
	controllerDone chan struct{} // closed once the process has exited
	controllerLog  string
)

// ensureController starts karp-controller against the suite's cluster
// with the suite's flags unless one runs already.
func ensureController(t testing.TB) {
	t.Helper()
	controllerMu.Lock()
	defer controllerMu.Unlock()
	if controllerCmd != nil {
		return
	}
	startControllerLocked(t, "--kwok-insufficient-capacity="+iceOffering)
}

// restartControllerWith stops the running controller (if any) and starts
// one with extra flags; it returns the new process id. The next
// ensureController after stopController goes back to the suite's flags.
func restartControllerWith(t testing.TB, extra ...string) int {
	t.Helper()
	stopController()
	controllerMu.Lock()
	defer controllerMu.Unlock()
	startControllerLocked(t, extra...)
	return controllerCmd.Process.Pid
}

func startControllerLocked(t testing.TB, extra ...string) {
	t.Helper()
	f := framework.Current(t)
	controllerLog = filepath.Join(f.Cluster.Dir, "logs", "karp-controller.log")
	logFile, err := os.OpenFile(controllerLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--kubeconfig=" + f.Cluster.Kubeconfig,
		"--disable-leader-election", "--metrics-port=0", "--health-probe-port=0"}, extra...)
	cmd := exec.Command(karpBinary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// KARP_CONTROLLER_GOGC sets the controller's GOGC alone (a benchmark
	// knob; the cluster's components keep theirs).
	if gogc := os.Getenv("KARP_CONTROLLER_GOGC"); gogc != "" {
		cmd.Env = append(os.Environ(), "GOGC="+gogc)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		t.Fatalf("starting karp controller: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = logFile.Close(); close(done) }()
	controllerCmd, controllerDone = cmd, done
	t.Logf("karp controller pid %d, log %s", cmd.Process.Pid, controllerLog)
}

// killController SIGKILLs the controller (no clean shutdown) and waits
// until the process is gone.
func killController(t testing.TB) {
	t.Helper()
	controllerMu.Lock()
	defer controllerMu.Unlock()
	if controllerCmd == nil {
		t.Fatal("no karp controller to kill")
	}
	if err := controllerCmd.Process.Kill(); err != nil {
		t.Fatalf("killing karp controller: %v", err)
	}
	<-controllerDone
	_, _ = fmt.Fprintf(os.Stderr, "e2e: killed karp controller pid %d\n", controllerCmd.Process.Pid)
	controllerCmd = nil
}

// stopController ends the controller at the end of the suite.
func stopController() {
	controllerMu.Lock()
	defer controllerMu.Unlock()
	if controllerCmd == nil {
		return
	}
	_ = controllerCmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-controllerDone:
	case <-time.After(15 * time.Second):
		_ = controllerCmd.Process.Kill()
		<-controllerDone
	}
	controllerCmd = nil
}
