package main

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestBadFlagsExitTwo(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "karp-controller")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building karp-controller: %v\n%s", err, out)
	}
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
	bin := filepath.Join(t.TempDir(), "karp-controller")
	ldflags := "-X github.com/karp-autoscaler/karp/pkg/metrics.Version=v9.8.7-test -X github.com/karp-autoscaler/karp/pkg/metrics.Commit=0123abcd"
	if out, err := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building karp-controller: %v\n%s", err, out)
	}
	// KUBECONFIG names no file: the flag must not need a cluster.
	cmd := exec.Command(bin, "--version")
	cmd.Env = append(cmd.Environ(), "KUBECONFIG="+filepath.Join(t.TempDir(), "absent"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("--version: %v", err)
	}
	if want := "karp-controller v9.8.7-test (commit 0123abcd, go"; !strings.HasPrefix(string(out), want) {
		t.Errorf("--version printed %q, want it to start with %q", out, want)
	}
}
