package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is one running component.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	waitErr error         // set before done is closed
	// retired is set (under Cluster.mu) when Restart kills the process on
	// purpose, so its exit is not reported as a death.
	retired bool
}

// startProcess runs bin with args in its own process group, its output
// appended to logPath, with env as its environment (nil: this process's).
// The process is killed if the calling process dies.
func startProcess(name, bin string, args, env []string, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening %s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitError describes an exit nobody asked for, with the log's tail.
func (p *process) exitError() error {
	return &ComponentExitError{Component: p.name, Err: p.waitErr, LogPath: p.logPath, LogTail: tailFile(p.logPath, 30)}
}

// stop sends SIGTERM to the process group, then SIGKILL after grace. A
// group left paused (Signal SIGSTOP) is resumed so it sees the SIGTERM.
func (p *process) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGTERM)
	_ = syscall.Kill(-p.pid(), syscall.SIGCONT)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
		<-p.done
	}
	// Anything the component forked into its group goes too.
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
}

// ComponentExitError reports a control plane component that exited while
// the cluster was starting or running.
type ComponentExitError struct {
	Component string
	Err       error
	LogPath   string
	LogTail   string
}

func (e *ComponentExitError) Error() string {
	status := "exited"
	if e.Err != nil {
		status = e.Err.Error()
	}
	return fmt.Sprintf("%s exited unexpectedly (%s); last lines of %s:\n%s", e.Component, status, e.LogPath, e.LogTail)
}

func (e *ComponentExitError) Unwrap() error { return e.Err }

// tailFile returns the last n lines of path (or why it could not be read).
func tailFile(path string, n int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(reading log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// ProcessAlive reports whether pid names a live (not zombie) process.
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name, which may itself
	// contain spaces or parentheses.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 || i+2 >= len(raw) {
		return false
	}
	state := raw[i+2]
	return state != 'Z' && state != 'X'
}

// killGroup signals the process group led by pid; a missing group is not
// an error.
func killGroup(pid int, sig syscall.Signal) error {
	err := syscall.Kill(-pid, sig)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signalling process group %d: %w", pid, err)
	}
	return nil
}
