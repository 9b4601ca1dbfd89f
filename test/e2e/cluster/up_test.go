package cluster

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/localcluster"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// karp runs the built karp binary and returns its stdout; it fails the
// test on a non-zero exit.
func karp(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, karpBin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("karp %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func TestUpDetachServesKubectlRunsPodsAndDownLeavesNothing(t *testing.T) {
	root := fixtures.Root(t)
	binDir, err := environment.EnsureBinaries()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// Registered after TempDir so it runs first: never leave a cluster
	// behind a failed assertion.
	// t.Context is already canceled when cleanups run.
	t.Cleanup(func() { _ = localcluster.Down(context.WithoutCancel(t.Context()), dir, 30*time.Second) })

	// 1. karp up --detach returns once ready, with the example NodePools.
	out := karp(t, "up", "--detach", "--dir", dir, "--bin-dir", binDir,
		"--apply", filepath.Join(root, "examples", "nodepools-default-stable.yaml"))
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if !strings.Contains(out, kubeconfig) {
		t.Errorf("karp up output does not name the kubeconfig %s:\n%s", kubeconfig, out)
	}
	state, err := localcluster.ReadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !state.Ready || len(state.Components) != 5 {
		t.Fatalf("state: ready=%v components=%d, want ready with 5", state.Ready, len(state.Components))
	}
	if got := state.Alive(); len(got) != 6 {
		t.Fatalf("%d of 6 recorded processes alive (%v), want all", len(got), got)
	}

	// 2. The built kubectl lists the karp resources with that kubeconfig.
	kubectl := exec.Command(filepath.Join(binDir, "kubectl"), "--kubeconfig", kubeconfig, "get", "nodepools,nodeclaims", "-o", "name")
	kubectlOut, err := kubectl.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get nodepools,nodeclaims: %v\n%s", err, kubectlOut)
	}
	for _, want := range []string{"nodepool.karpenter.sh/default", "nodepool.karpenter.sh/stable"} {
		if !strings.Contains(string(kubectlOut), want) {
			t.Errorf("kubectl output lacks %s:\n%s", want, kubectlOut)
		}
	}

	// 3. A kwok node turns Ready and a pod runs on it.
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: environment.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	framework.ExpectNodeReadyAndPodRuns(t, cl, "up-node")

	// 4. karp down stops every recorded process and frees every port.
	if out := karp(t, "down", "--dir", dir); !strings.Contains(out, "stopped") {
		t.Errorf("karp down output: %q", out)
	}
	for _, r := range append([]localcluster.ProcessRecord{state.Supervisor}, state.Components...) {
		if r.Alive() {
			t.Errorf("%s (pid %d) still running after karp down", r.Name, r.PID)
		}
	}
	for _, port := range state.Ports.All() {
		if localcluster.PortInUse(port) {
			t.Errorf("127.0.0.1:%d still held after karp down", port)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "state.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file left behind: %v", err)
	}
	if out := karp(t, "down", "--dir", dir); !strings.Contains(out, "no local cluster running") {
		t.Errorf("second karp down output: %q", out)
	}
}

func TestKilledKarpUpTakesItsComponentsWithIt(t *testing.T) {
	binDir, err := environment.EnsureBinaries()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Cleanup(func() { _ = localcluster.Down(context.WithoutCancel(t.Context()), dir, 30*time.Second) })

	var output bytes.Buffer
	up := exec.Command(karpBin, "up", "--dir", dir, "--bin-dir", binDir)
	up.Stdout, up.Stderr = &output, &output
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = up.Wait(); close(exited) }()

	var state *localcluster.State
	framework.Eventually(t, 4*time.Minute, func(context.Context) (bool, string) {
		select {
		case <-exited:
			t.Fatalf("karp up exited before the cluster was ready:\n%s", output.String())
		default:
		}
		state, err = localcluster.ReadState(dir)
		if err != nil {
			return false, err.Error()
		}
		return state.Ready, "cluster state not ready"
	})

	// SIGKILL leaves karp no chance to clean up: the components must die
	// on their own (parent-death signal), not linger as orphans.
	if err := up.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	framework.Eventually(t, 30*time.Second, func(context.Context) (bool, string) {
		var alive []string
		for _, r := range state.Components {
			if r.Alive() {
				alive = append(alive, r.Name)
			}
		}
		return len(alive) == 0, "still running: " + strings.Join(alive, ", ")
	})
	framework.Eventually(t, 30*time.Second, func(context.Context) (bool, string) {
		for _, port := range state.Ports.All() {
			if localcluster.PortInUse(port) {
				return false, "port still held"
			}
		}
		return true, ""
	})
}
