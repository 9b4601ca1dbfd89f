package environment

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// RepoRoot returns the karp repository root: the nearest directory at or
// above the working directory holding a go.mod of module
// github.com/karp-autoscaler/karp.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("getting working directory: %w", err)
	}
	for {
		raw, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && isKarpModule(raw) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no karp go.mod found above the working directory")
		}
		dir = parent
	}
}

func isKarpModule(goMod []byte) bool {
	const want = "module github.com/karp-autoscaler/karp\n"
	return len(goMod) >= len(want) && string(goMod[:len(want)]) == want
}

// BinDir returns the directory holding the control plane binaries:
// $KARP_BIN_DIR/k8s when KARP_BIN_DIR is set, else <repo>/bin/k8s.
func BinDir(root string) string {
	if dir := os.Getenv("KARP_BIN_DIR"); dir != "" {
		return filepath.Join(dir, "k8s")
	}
	return filepath.Join(root, "bin", "k8s")
}

var ensureOnce struct {
	sync.Mutex
	done map[string]bool
}

// EnsureBinaries builds the control plane binaries with hack/build-tools.sh
// unless they are already up to date, and returns their directory. The
// script's own stamp makes the up-to-date check cheap; it serialises
// concurrent builds across processes with a lock file.
func EnsureBinaries() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	binDir := BinDir(root)
	ensureOnce.Lock()
	defer ensureOnce.Unlock()
	if ensureOnce.done[binDir] {
		return binDir, nil
	}
	script := filepath.Join(root, "hack", "build-tools.sh")
	if exec.Command("bash", script, "--check").Run() != nil {
		cmd := exec.Command("bash", script)
		cmd.Stdout = os.Stderr
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("building control plane binaries with %s: %w", script, err)
		}
	}
	if ensureOnce.done == nil {
		ensureOnce.done = map[string]bool{}
	}
	ensureOnce.done[binDir] = true
	return binDir, nil
}
