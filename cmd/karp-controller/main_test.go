package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// testVersion and testCommit are what the tests' binary is built with, as
// hack/image.sh sets them.
const (
	testVersion = "v9.8.7-test"
	testCommit  = "0123abcd"
)

// built is the karp-controller binary the tests run, linked once for the
// package (a link is several CPU seconds).
var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// controllerBinary builds karp-controller with the test version and
// commit, once, and returns its path.
func controllerBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "karp-controller-test-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "karp-controller")
		ldflags := "-w -X github.com/karp-autoscaler/karp/pkg/metrics.Version=" + testVersion +
			" -X github.com/karp-autoscaler/karp/pkg/metrics.Commit=" + testCommit
		if out, err := exec.Command("go", "build", "-ldflags", ldflags, "-o", built.bin, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("building karp-controller: %w\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

func TestBadFlagsExitTwo(t *testing.T) {
	bin := controllerBinary(t)
	for _, args := range [][]string{{"--no-such-flag"}, {"--cloud-provider=nowhere"}} {
		var stderr bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Errorf("%v: %v, want exit status 2 (stderr %q)", args, err, stderr.String())
		}
		name := strings.TrimPrefix(strings.SplitN(args[0], "=", 2)[0], "--")
		if !strings.Contains(stderr.String(), name) {
			t.Errorf("%v: stderr %q does not name %s", args, stderr.String(), name)
		}
	}
}

// The point of this binary: it links the controller and not the CLI's
// other subcommands (simulate's offline CRD validation with the API
// server's CEL validators, the live view), whose code would stay
// resident. The CEL engine itself (github.com/google/cel-go) is the
// controller's own: the AWS provider evaluates an EC2NodeClass's CEL
// maxPods under the NodeClassCEL gate.
func TestLeavesOutTheCLIDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, unwanted := range []string{"k8s.io/apiextensions-apiserver/pkg/apiserver",
			"github.com/karp-autoscaler/karp/pkg/simulate", "github.com/karp-autoscaler/karp/pkg/manifest", "github.com/karp-autoscaler/karp/pkg/view"} {
			if strings.HasPrefix(pkg, unwanted) {
				t.Errorf("karp-controller depends on %s", pkg)
			}
		}
	}
}

// TestVersionFlagPrintsTheBuild: --version prints the version and commit
// set at build time (as hack/image.sh sets them) and exits 0, without
// connecting anywhere.
func TestVersionFlagPrintsTheBuild(t *testing.T) {
	bin := controllerBinary(t)
	// KUBECONFIG names no file: the flag must not need a cluster.
	cmd := exec.Command(bin, "--version")
	cmd.Env = append(cmd.Environ(), "KUBECONFIG="+filepath.Join(t.TempDir(), "absent"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("--version: %v", err)
	}
	if want := "karp-controller " + testVersion + " (commit " + testCommit + ", go"; !strings.HasPrefix(string(out), want) {
		t.Errorf("--version printed %q, want it to start with %q", out, want)
	}
}
