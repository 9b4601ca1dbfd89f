// Package repo finds the karp source tree a process runs in: the nearest
// directory at or above the working directory whose go.mod declares module
// github.com/karp-autoscaler/karp. It is the one place that walks up to
// go.mod: the local cluster uses it to find bin/k8s in a checkout, and the
// tests reach their fixtures through pkg/test/fixtures, which uses it.
package repo

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Module is karp's module path.
const Module = "github.com/karp-autoscaler/karp"

// ErrNotFound is returned by Root outside a karp source tree.
var ErrNotFound = errors.New("no go.mod of module " + Module + " at or above the working directory")

// Root returns the karp repository root holding the working directory.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("getting the working directory: %w", err)
	}
	return RootFrom(dir)
}

// RootFrom returns the karp repository root at or above dir.
func RootFrom(dir string) (string, error) {
	for {
		raw, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && isKarpModule(raw) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNotFound
		}
		dir = parent
	}
}

// isKarpModule reports whether a go.mod's module line is karp's: the first
// line, as the karp go.mod writes it.
func isKarpModule(goMod []byte) bool {
	line, _, _ := bytes.Cut(goMod, []byte("\n"))
	return string(bytes.TrimSpace(line)) == "module "+Module
}
