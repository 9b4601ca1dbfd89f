package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/karp-autoscaler/karp/pkg/localcluster"
	"github.com/karp-autoscaler/karp/pkg/test/awssim"
)

func TestRunFlagsPassControllerFlagsThrough(t *testing.T) {
	opts, err := parseRunFlags([]string{"--dir", "d", "--apply", "a.yaml", "--instance-types-file-path", "types.json",
		"--", "--log-level=debug", "--batch-idle-duration=2s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	want := []string{"--kubeconfig=/k", "--disable-leader-election", "--metrics-port=0", "--health-probe-port=0",
		"--instance-types-file-path=" + abs("types.json"), "--log-level=debug", "--batch-idle-duration=2s"}
	if diff := cmp.Diff(want, opts.controllerCommandArgs("/k", nil)); diff != "" {
		t.Errorf("controller args (-want,+got):\n%s", diff)
	}
	if opts.up.dir != abs("d") || len(opts.up.apply) != 1 || opts.up.apply[0] != abs("a.yaml") {
		t.Errorf("dir %q apply %q, want absolute paths", opts.up.dir, opts.up.apply)
	}
	if !opts.showView {
		t.Error("the view is on by default")
	}
}

func TestRunFlagsAWSRunsTheControllerOnTheSimulatedAccount(t *testing.T) {
	opts, err := parseRunFlags([]string{"--cloud-provider", "aws", "--cluster-name", "demo", "--kubelet-delay", "5s", "--", "--log-level=debug"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if opts.cloudProvider != runProviderAWS || opts.clusterName != "demo" || opts.kubeletDelay != 5*time.Second {
		t.Fatalf("options %+v", opts)
	}
	sim, err := awssim.New(t.Context(), awssim.Options{ClusterName: opts.clusterName, KubernetesVersion: "1.33"})
	if err != nil {
		t.Fatal(err)
	}
	got := opts.controllerCommandArgs("/k", sim.ControllerArgs())
	want := []string{"--kubeconfig=/k", "--disable-leader-election", "--metrics-port=0", "--health-probe-port=0",
		"--cloud-provider=aws", "--cluster-name=demo", "--interruption-queue=demo", "--ami-refresh-interval=1m", "--subnet-refresh-interval=1m", "--ssm-alias-cache-ttl=1m",
		"--log-level=debug"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("controller args (-want,+got):\n%s", diff)
	}

	objs, err := localcluster.ReadManifests([]string{writeFile(t, awsDefaultsFor(sim))})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, obj := range objs {
		kinds[obj.GetKind()] = true
		if obj.GetKind() != "EC2NodeClass" {
			continue
		}
		role, _, _ := unstructured.NestedString(obj.Object, "spec", "role")
		terms, _, _ := unstructured.NestedSlice(obj.Object, "spec", "subnetSelectorTerms")
		if role != "KarpenterNodeRole-demo" || len(terms) != 1 || terms[0].(map[string]any)["tags"].(map[string]any)["karpenter.sh/discovery"] != "demo" {
			t.Errorf("default EC2NodeClass: role %q subnet terms %v", role, terms)
		}
	}
	if !kinds["EC2NodeClass"] || !kinds["NodePool"] || len(objs) != 2 {
		t.Errorf("default manifests hold %v, want one EC2NodeClass and one NodePool", kinds)
	}
}

func TestRunFlagsRejectAnUnknownCloudProvider(t *testing.T) {
	if _, err := parseRunFlags([]string{"--cloud-provider", "gce"}, io.Discard); err == nil {
		t.Error("--cloud-provider gce was accepted")
	}
	if _, err := parseRunFlags([]string{"--cloud-provider", "aws", "--instance-types-file-path", "x.json"}, io.Discard); err == nil {
		t.Error("a kwok catalog was accepted with the AWS provider")
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunFlagsRejectUnknownFlags(t *testing.T) {
	if _, err := parseRunFlags([]string{"--no-such-flag"}, io.Discard); err == nil {
		t.Error("an unknown flag before -- was accepted")
	}
}

func TestRunPrefersTheLeanControllerBinary(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "karp")
	program, prefix := controllerCommand(exe)
	if program != exe || len(prefix) != 1 || prefix[0] != "controller" {
		t.Errorf("without karp-controller beside karp: %s %v, want %s controller", program, prefix, exe)
	}
	lean := filepath.Join(dir, "karp-controller")
	if err := os.WriteFile(lean, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	program, prefix = controllerCommand(exe)
	if program != lean || len(prefix) != 0 {
		t.Errorf("with karp-controller beside karp: %s %v, want %s and no subcommand", program, prefix, lean)
	}
}
