// Package cluster holds the foundation end-to-end tests: the local control
// plane (`karp up` / `karp down` and the framework's cluster) runs pods on
// kwok nodes and serves the karp APIs.
package cluster

import (
	"fmt"
	"os"
	"testing"

	"github.com/karp-autoscaler/karp/pkg/test/environment"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// karpBin is the karp binary built for this package.
var karpBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if karpBin, err = framework.Build("github.com/karp-autoscaler/karp/cmd/karp", "karp"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer framework.RemoveBuilt(karpBin)
	if _, err := environment.EnsureBinaries(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return framework.Run(m)
}
