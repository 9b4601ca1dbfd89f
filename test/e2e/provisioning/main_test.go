package provisioning_test

import (
	"fmt"
	"os"
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
	if karpBinary, err = framework.Build("github.com/karp-autoscaler/karp/cmd/karp-controller", "karp-controller"); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer framework.RemoveBuilt(karpBinary)
	code := framework.Run(m)
	stopController()
	return code
}
