package localcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// startSleeper starts a process group (a shell with a child) standing in
// for a component, as a real process.
func startSleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 300 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	return cmd
}

func TestDownKillsRecordedProcessGroups(t *testing.T) {
	dir := t.TempDir()
	a, b := startSleeper(t), startSleeper(t)
	// Wait until /proc shows both, so their start times are recorded.
	for _, c := range []*exec.Cmd{a, b} {
		for procStartTime(c.Process.Pid) == "" {
			time.Sleep(10 * time.Millisecond)
		}
	}
	state := &State{
		// A dead supervisor: Down must still stop the components.
		Supervisor: ProcessRecord{Name: "supervisor", PID: 1 << 22, StartTime: "1"},
		Components: []ProcessRecord{recordProcess("a", a.Process.Pid), recordProcess("b", b.Process.Pid)},
	}
	if err := writeState(dir, state); err != nil {
		t.Fatal(err)
	}
	if err := Down(t.Context(), dir, 200*time.Millisecond); err != nil {
		t.Fatalf("Down: %v", err)
	}
	for _, r := range state.Components {
		if r.Alive() {
			t.Errorf("%s (pid %d) survived Down", r.Name, r.PID)
		}
	}
	if _, err := os.Stat(layout{dir}.state()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file kept: %v", err)
	}
	if err := Down(t.Context(), dir, time.Second); !errors.Is(err, ErrNotRunning) {
		t.Errorf("second Down = %v, want ErrNotRunning", err)
	}
}

func TestProcessRecordDetectsPIDReuse(t *testing.T) {
	self := recordProcess("self", os.Getpid())
	if !self.Alive() {
		t.Fatal("this process is not alive by its own record")
	}
	reused := self
	reused.StartTime = "0"
	if reused.Alive() {
		t.Error("a record with another start time counts as alive")
	}
	if ProcessAlive(-1) || ProcessAlive(0) {
		t.Error("non-positive pids count as alive")
	}
}

func TestTailFileKeepsLastLines(t *testing.T) {
	path := t.TempDir() + "/log"
	if err := os.WriteFile(path, []byte("1\n2\n3\n4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := tailFile(path, 2), "  3\n  4"; got != want {
		t.Errorf("tail = %q, want %q", got, want)
	}
}

func TestPortClashSeesThroughWrapping(t *testing.T) {
	clash := &ComponentExitError{Component: Etcd, LogTail: "listen tcp 127.0.0.1:2379: bind: address already in use"}
	other := &ComponentExitError{Component: Etcd, LogTail: "panic: something else"}
	tests := map[string]struct {
		err  error
		want bool
	}{
		"wrapped by a readiness wait": {fmt.Errorf("waiting for kube-apiserver /readyz: %w", clash), true},
		"joined with a stop error":    {errors.Join(fmt.Errorf("waiting: %w", clash), errors.New("stop")), true},
		"another exit":                {fmt.Errorf("waiting: %w", other), false},
		"a timeout":                   {errors.New("timed out waiting for kube-apiserver /readyz"), false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := portClash(tc.err); got != tc.want {
				t.Errorf("portClash = %v, want %v", got, tc.want)
			}
		})
	}
}
