package provisioning_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/karp-autoscaler/karp/pkg/repo"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// karpBinary is the karp binary TestMain builds.
var karpBinary string

// repoRoot is the repository root (where go.mod is).
var repoRoot string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if repoRoot, err = repo.Root(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "karp-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	karpBinary = filepath.Join(dir, "karp-controller")
	build := exec.Command("go", "build", "-o", karpBinary, "./cmd/karp-controller")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building karp-controller: %v\n%s", err, out)
		return 1
	}
	code := framework.Run(m)
	stopController()
	return code
}
