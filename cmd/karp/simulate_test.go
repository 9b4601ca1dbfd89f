package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
)

func TestSimulateCommand(t *testing.T) {
	seeds := fixtures.Example(t, "")
	bench := fixtures.Bench(t, "")
	badPool := filepath.Join(t.TempDir(), "pool.yaml")
	if err := os.WriteFile(badPool, []byte("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x}\nspec:\n  weight: 0\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}\n      requirements: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noToleration := filepath.Join("..", "..", "pkg", "simulate", "testdata", "gpu-without-toleration.yaml")
	staticPool := filepath.Join("..", "..", "pkg", "simulate", "testdata", "static-nodepool.yaml")
	zoneSpread := filepath.Join(t.TempDir(), "scheduler-config.yaml")
	if err := os.WriteFile(zoneSpread, []byte("podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		args       []string
		wantCode   int
		wantStdout []string
		wantStderr []string
	}{
		"every pod placed exits 0 (embedded EC2 catalog)": {
			args:     []string{"simulate", "-f", filepath.Join(seeds, "nodepool-gpu.yaml"), "-f", filepath.Join(seeds, "deployment-inflate-gpu.yaml")},
			wantCode: 0, wantStdout: []string{"gpu       p3.8xlarge", "Total: 1 node, 3 pods, $12.24/hour, $8935.20/month"},
		},
		"a pending pod exits 3 and says why": {
			args:     []string{"simulate", "-f", filepath.Join(seeds, "nodepool-gpu.yaml"), "-f", noToleration},
			wantCode: 3, wantStdout: []string{"1 pod would stay pending:", "default/gpu-no-toleration", "NodePool gpu: taint nvidia.com/gpu=true:NoSchedule not tolerated"},
		},
		"another catalog with --catalog": {
			args:     []string{"simulate", "-f", filepath.Join(bench, "pods-diverse-1000.json"), "-f", filepath.Join(bench, "nodepool.yaml"), "--catalog", filepath.Join(bench, "instance-types-400.json")},
			wantCode: 0, wantStdout: []string{"bench-it-", "1000 pods"},
		},
		"invalid NodePool exits 1 naming file, document and field": {
			args:     []string{"simulate", "-f", badPool},
			wantCode: 1, wantStderr: []string{"karp simulate: " + badPool + ": document 1 (NodePool x): ", "spec.weight", "should be greater than or equal to 1"},
		},
		"--scheduler-config spreads the Deployment over zones": {
			args:     []string{"simulate", "-f", filepath.Join(seeds, "nodepool-gpu.yaml"), "-f", filepath.Join(seeds, "deployment-inflate-gpu.yaml"), "--scheduler-config", zoneSpread},
			wantCode: 0, wantStdout: []string{"Total: 3 nodes, 3 pods"},
		},
		"a bad --scheduler-config exits 1 naming the file": {
			args:     []string{"simulate", "-f", seeds, "--scheduler-config", "/nonexistent-scheduler.yaml"},
			wantCode: 1, wantStderr: []string{"--scheduler-config", "/nonexistent-scheduler.yaml"},
		},
		"missing catalog exits 1": {
			args:     []string{"simulate", "-f", seeds, "--catalog", "/nonexistent.json"},
			wantCode: 1, wantStderr: []string{"--catalog /nonexistent.json"},
		},
		"no manifests exits 1":   {args: []string{"simulate"}, wantCode: 1, wantStderr: []string{"pass at least one -f PATH"}},
		"bad output exits 1":     {args: []string{"simulate", "-f", seeds, "-o", "xml"}, wantCode: 1, wantStderr: []string{`-o "xml"`}},
		"stray argument exits 1": {args: []string{"simulate", seeds}, wantCode: 1, wantStderr: []string{"manifests are passed with -f"}},
		"help exits 0":           {args: []string{"simulate", "-h"}, wantCode: 0, wantStderr: []string{"Usage: karp simulate", "Exit status: 0 all pods placed, 3"}},
		"yaml prints NodeClaims": {
			args:     []string{"simulate", "-f", filepath.Join(seeds, "nodepool-gpu.yaml"), "-f", filepath.Join(seeds, "deployment-inflate-gpu.yaml"), "-o", "yaml"},
			wantCode: 0, wantStdout: []string{"kind: NodeClaim", "generateName: gpu-", "karpenter.sh/nodepool: gpu"},
		},
		"listed in usage": {args: nil, wantCode: 0, wantStdout: []string{"simulate"}},
		"a static NodePool's nodes (no --feature-gates: served)": {
			args:     []string{"simulate", "-f", staticPool},
			wantCode: 0, wantStdout: []string{"reserved (static)  c5.xlarge", "Total: 3 nodes, 6 pods"},
		},
		"--feature-gates as the controller's: StaticCapacity off leaves the static NodePool inert": {
			args:     []string{"simulate", "-f", staticPool, "--feature-gates", "NodeOverlay=true"},
			wantCode: 0, wantStdout: []string{"Total: 2 nodes, 6 pods", "NodePool reserved: static (replicas 2) but the StaticCapacity feature gate is off: inert"},
		},
		"an unknown feature gate exits 1": {
			args:     []string{"simulate", "-f", staticPool, "--feature-gates", "Teleport=true"},
			wantCode: 1, wantStderr: []string{`unknown feature gate "Teleport"`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			if code != tc.wantCode {
				t.Fatalf("exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout.String(), stderr.String())
			}
			for _, w := range tc.wantStdout {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout does not contain %q:\n%s", w, stdout.String())
				}
			}
			for _, w := range tc.wantStderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr does not contain %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}

func TestSimulateJSON(t *testing.T) {
	seeds := fixtures.Example(t, "")
	var stdout, stderr bytes.Buffer
	code := run([]string{"simulate", "-o", "json", "-f", seeds, "-f", filepath.Join("..", "..", "pkg", "simulate", "testdata", "oversized-pod.yaml")}, &stdout, &stderr)
	if code != 3 {
		t.Fatalf("exit code = %d, want 3; stderr:\n%s", code, stderr.String())
	}
	var got struct {
		NodeClaims []struct {
			NodePool, InstanceType, Zone, CapacityType string
			PricePerHour                               float64
			Pods                                       []string
		} `json:"nodeClaims"`
		Unschedulable []struct {
			Pod     string   `json:"pod"`
			Reasons []string `json:"reasons"`
		} `json:"unschedulable"`
		TotalPricePerHour float64 `json:"totalPricePerHour"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("stdout is not one JSON document: %v", err)
	}
	pods, sum := 0, 0.0
	for _, nc := range got.NodeClaims {
		if nc.NodePool == "" || nc.InstanceType == "" || nc.Zone == "" || nc.CapacityType == "" || nc.PricePerHour <= 0 {
			t.Errorf("incomplete NodeClaim %+v", nc)
		}
		pods += len(nc.Pods)
		sum += nc.PricePerHour
	}
	if pods != 206 {
		t.Errorf("%d pods on NodeClaims, want the seeds' 206", pods)
	}
	if d := sum - got.TotalPricePerHour; d > 1e-4 || d < -1e-4 {
		t.Errorf("totalPricePerHour %v, NodeClaims sum to %v", got.TotalPricePerHour, sum)
	}
	if len(got.Unschedulable) != 1 || got.Unschedulable[0].Pod != "batch/oversized" || len(got.Unschedulable[0].Reasons) == 0 {
		t.Errorf("unschedulable = %+v, want batch/oversized with reasons", got.Unschedulable)
	}
}

func TestSimulateReadsStdin(t *testing.T) {
	seeds := fixtures.Example(t, "")
	in, err := os.Open(filepath.Join(seeds, "deployment-inflate-gpu.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	saved := os.Stdin
	os.Stdin = in
	defer func() { os.Stdin = saved }()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"simulate", "-f", filepath.Join(seeds, "nodepool-gpu.yaml"), "-f", "-"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code = %d; stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "Total: 1 node, 3 pods") {
		t.Errorf("stdout:\n%s", stdout.String())
	}
}
