package operator

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/karp-autoscaler/karp/pkg/options"
)

// logLines builds the process logger writing to a file, runs fn, and
// returns the JSON lines it wrote.
func logLines(t *testing.T, level string, fn func(opts *options.Options) error) []map[string]any {
	t.Helper()
	path := filepath.Join(t.TempDir(), "log.json")
	opts := &options.Options{LogLevel: level, LogOutputPaths: path, LogErrorOutputPaths: "stderr"}
	if err := fn(opts); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if line == "" {
			continue
		}
		m := map[string]any{}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		out = append(out, m)
	}
	return out
}

func TestLoggerWritesUpstreamShapedJSON(t *testing.T) {
	lines := logLines(t, options.LogLevelInfo, func(opts *options.Options) error {
		logger, err := NewLogger(opts)
		if err != nil {
			return err
		}
		scoped := logger.WithName("nodeclaim").WithValues("NodeClaim", "a", "reconcileID", "r1")
		scoped.Info("launched nodeclaim", "providerID", "kwok://a")
		scoped.V(1).Info("debug detail is filtered at info")
		scoped.Error(errors.New("boom"), "reconciler error")
		return nil
	})
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2 (debug filtered): %v", len(lines), lines)
	}
	want := map[string]any{
		"level": "INFO", "logger": "controller.nodeclaim", "message": "launched nodeclaim",
		"NodeClaim": "a", "reconcileID": "r1", "providerID": "kwok://a",
	}
	for k, v := range want {
		if lines[0][k] != v {
			t.Errorf("%s = %v, want %v (line %v)", k, lines[0][k], v, lines[0])
		}
	}
	if _, ok := lines[0]["time"]; !ok {
		t.Error("no time key")
	}
	if _, ok := lines[0]["caller"]; ok {
		t.Error("caller logged at info level")
	}
	if lines[1]["level"] != "ERROR" || lines[1]["error"] != "boom" || lines[1]["NodeClaim"] != "a" {
		t.Errorf("error line = %v", lines[1])
	}
}

func TestDebugLoggerReportsTheCallersFile(t *testing.T) {
	lines := logLines(t, options.LogLevelDebug, func(opts *options.Options) error {
		logger, err := NewLogger(opts)
		if err != nil {
			return err
		}
		logger.WithValues("k", "v").V(1).Info("debug line")
		return nil
	})
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want 1", len(lines))
	}
	caller, _ := lines[0]["caller"].(string)
	if !strings.HasPrefix(caller, "operator/logging_test.go:") {
		t.Errorf("caller = %q, want this test file (the wrapper must not show up)", caller)
	}
}
