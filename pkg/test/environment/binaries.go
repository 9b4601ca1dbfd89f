package environment

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/karp-autoscaler/karp/pkg/repo"
)

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
	root, err := repo.Root()
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
