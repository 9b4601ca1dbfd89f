package localcluster

import (
	"os"
	"path/filepath"
	"strings"
)

// DefaultBinDir finds the control plane binaries: $KARP_BIN_DIR/k8s when
// KARP_BIN_DIR is set; else bin/k8s in the karp repository holding the
// working directory; else k8s beside the running executable (bin/karp and
// bin/k8s are siblings).
func DefaultBinDir() string {
	if dir := os.Getenv("KARP_BIN_DIR"); dir != "" {
		return filepath.Join(dir, "k8s")
	}
	if root, ok := repoRoot(); ok {
		return filepath.Join(root, "bin", "k8s")
	}
	if exe, err := os.Executable(); err == nil {
		return filepath.Join(filepath.Dir(exe), "k8s")
	}
	return filepath.Join("bin", "k8s")
}

// repoRoot walks up from the working directory to the karp go.mod.
func repoRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		raw, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(raw), "module github.com/karp-autoscaler/karp\n") {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
