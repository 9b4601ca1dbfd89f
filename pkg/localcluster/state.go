package localcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// stateFile is the pid file of a cluster directory.
const stateFile = "state.json"

// ErrNotRunning is returned by Down when the directory holds no cluster.
var ErrNotRunning = errors.New("no local cluster recorded in this directory")

// State is what a running cluster records in its directory, so another
// process (`karp down`, a test) can find and stop it.
type State struct {
	// Supervisor is the process that started the components and stops
	// them on SIGTERM (`karp up`, or a test binary).
	Supervisor ProcessRecord `json:"supervisor"`
	// Components are the control plane processes, in start order. Each
	// leads its own process group.
	Components []ProcessRecord `json:"components"`
	Ports      Ports           `json:"ports"`
	Kubeconfig string          `json:"kubeconfig"`
	// Ready is true once the whole control plane passed its readiness
	// checks and the CRDs are Established.
	Ready bool `json:"ready"`
}

// ProcessRecord identifies one process; StartTime (from /proc) guards
// against signalling an unrelated process that reused the pid.
type ProcessRecord struct {
	Name      string `json:"name"`
	PID       int    `json:"pid"`
	StartTime string `json:"startTime"`
}

// Alive reports whether the recorded process still runs.
func (r ProcessRecord) Alive() bool {
	return ProcessAlive(r.PID) && procStartTime(r.PID) == r.StartTime
}

func recordProcess(name string, pid int) ProcessRecord {
	return ProcessRecord{Name: name, PID: pid, StartTime: procStartTime(pid)}
}

// procStartTime returns field 22 of /proc/<pid>/stat (start time in clock
// ticks since boot), or "" when the process is gone.
func procStartTime(pid int) string {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return ""
	}
	// Fields after the command: state is field 3, start time field 22.
	fields := bytes.Fields(raw[i+1:])
	const startTimeIndex = 22 - 3
	if len(fields) <= startTimeIndex {
		return ""
	}
	return string(fields[startTimeIndex])
}

// ReadState loads the state file of a cluster directory.
func ReadState(dir string) (*State, error) {
	raw, err := os.ReadFile(layout{dir}.state())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotRunning
	}
	if err != nil {
		return nil, fmt.Errorf("reading cluster state: %w", err)
	}
	s := &State{}
	if err := json.Unmarshal(raw, s); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", layout{dir}.state(), err)
	}
	return s, nil
}

func writeState(dir string, s *State) error {
	raw, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding cluster state: %w", err)
	}
	tmp := filepath.Join(dir, "."+stateFile+".tmp")
	if err := os.WriteFile(tmp, raw, 0o644); err != nil {
		return fmt.Errorf("writing cluster state: %w", err)
	}
	if err := os.Rename(tmp, layout{dir}.state()); err != nil {
		return fmt.Errorf("writing cluster state: %w", err)
	}
	return nil
}

// Alive lists the recorded processes that still run.
func (s *State) Alive() []ProcessRecord {
	var alive []ProcessRecord
	for _, r := range append([]ProcessRecord{s.Supervisor}, s.Components...) {
		if r.Alive() {
			alive = append(alive, r)
		}
	}
	return alive
}

// Down stops the cluster recorded in dir: it asks the supervisor to stop
// (SIGTERM), which stops the components in order; whatever still runs
// after grace is killed by process group. It returns ErrNotRunning when
// dir records no cluster, and removes the state file once nothing runs.
func Down(ctx context.Context, dir string, grace time.Duration) error {
	s, err := ReadState(dir)
	if err != nil {
		return err
	}
	if s.Supervisor.Alive() && s.Supervisor.PID != os.Getpid() {
		_ = syscall.Kill(s.Supervisor.PID, syscall.SIGTERM)
	}
	if !waitGone(ctx, s, grace) {
		for _, c := range s.Components {
			if c.Alive() {
				_ = killGroup(c.PID, syscall.SIGKILL)
			}
		}
		if s.Supervisor.Alive() && s.Supervisor.PID != os.Getpid() {
			_ = syscall.Kill(s.Supervisor.PID, syscall.SIGKILL)
		}
		waitGone(ctx, s, 10*time.Second)
	}
	if alive := s.Alive(); len(alive) > 0 && !(len(alive) == 1 && alive[0].PID == os.Getpid()) {
		return fmt.Errorf("processes still running after SIGKILL: %v", alive)
	}
	if err := os.Remove(layout{dir}.state()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing cluster state: %w", err)
	}
	return nil
}

// waitGone polls until every recorded process other than this one has
// exited, or the timeout passes.
func waitGone(ctx context.Context, s *State, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		gone := true
		for _, r := range s.Alive() {
			if r.PID != os.Getpid() {
				gone = false
			}
		}
		if gone {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return false
		case <-tick.C:
		}
	}
}
