package localcluster

import (
	"os"
	"path/filepath"

	"github.com/karp-autoscaler/karp/pkg/repo"
)

// DefaultBinDir finds the control plane binaries: $KARP_BIN_DIR/k8s when
// KARP_BIN_DIR is set; else bin/k8s in the karp repository holding the
// working directory; else k8s beside the running executable (bin/karp and
// bin/k8s are siblings).
func DefaultBinDir() string {
	if dir := os.Getenv("KARP_BIN_DIR"); dir != "" {
		return filepath.Join(dir, "k8s")
	}
	if root, err := repo.Root(); err == nil {
		return filepath.Join(root, "bin", "k8s")
	}
	if exe, err := os.Executable(); err == nil {
		return filepath.Join(filepath.Dir(exe), "k8s")
	}
	return filepath.Join("bin", "k8s")
}
