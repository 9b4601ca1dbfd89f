package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRunFlagsPassControllerFlagsThrough(t *testing.T) {
	opts, err := parseRunFlags([]string{"--dir", "d", "--apply", "a.yaml", "--instance-types-file-path", "types.json",
		"--", "--log-level=debug", "--batch-idle-duration=2s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	want := []string{"--kubeconfig=/k", "--disable-leader-election", "--metrics-port=0", "--health-probe-port=0",
		"--instance-types-file-path=" + abs("types.json"), "--log-level=debug", "--batch-idle-duration=2s"}
	if diff := cmp.Diff(want, opts.controllerCommandArgs("/k")); diff != "" {
		t.Errorf("controller args (-want,+got):\n%s", diff)
	}
	if opts.up.dir != abs("d") || len(opts.up.apply) != 1 || opts.up.apply[0] != abs("a.yaml") {
		t.Errorf("dir %q apply %q, want absolute paths", opts.up.dir, opts.up.apply)
	}
	if !opts.showView {
		t.Error("the view is on by default")
	}
}

func TestRunFlagsRejectUnknownFlags(t *testing.T) {
	if _, err := parseRunFlags([]string{"--no-such-flag"}, io.Discard); err == nil {
		t.Error("an unknown flag before -- was accepted")
	}
}

func TestRunPrefersTheLeanControllerBinary(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "karp")
	program, prefix := controllerCommand(exe)
	if program != exe || len(prefix) != 1 || prefix[0] != "controller" {
		t.Errorf("without karp-controller beside karp: %s %v, want %s controller", program, prefix, exe)
	}
	lean := filepath.Join(dir, "karp-controller")
	if err := os.WriteFile(lean, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	program, prefix = controllerCommand(exe)
	if program != lean || len(prefix) != 0 {
		t.Errorf("with karp-controller beside karp: %s %v, want %s and no subcommand", program, prefix, lean)
	}
}
