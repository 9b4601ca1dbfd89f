package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/karp-autoscaler/karp/pkg/metrics"
)

func TestRunDispatch(t *testing.T) {
	tests := map[string]struct {
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		"no args prints usage":        {args: nil, wantCode: 0, wantStdout: "Commands:"},
		"version":                     {args: []string{"version"}, wantCode: 0, wantStdout: "karp " + metrics.Version + " (commit " + metrics.Commit + ")"},
		"unknown command is an error": {args: []string{"frobnicate"}, wantCode: 1, wantStderr: `unknown command "frobnicate"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			if code != tc.wantCode {
				t.Fatalf("exit code = %d, want %d (stderr %q)", code, tc.wantCode, stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.wantStdout) {
				t.Errorf("stdout %q does not contain %q", stdout.String(), tc.wantStdout)
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tc.wantStderr)
			}
		})
	}
}
