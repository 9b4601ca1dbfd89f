package simulation

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/catalog"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
)

// benchInput loads the scheduling benchmark: 400 instance types, one
// NodePool, n diverse pods.
func benchInput(tb testing.TB, n string) Input {
	tb.Helper()
	dir := fixtures.Bench(tb, "")
	types, err := catalog.LoadFile(filepath.Join(dir, "instance-types-400.json"), catalog.DefaultOptions())
	if err != nil {
		tb.Fatal(err)
	}
	np := &karpv1.NodePool{}
	readYAML(tb, filepath.Join(dir, "nodepool.yaml"), np)
	list := &corev1.PodList{}
	readYAML(tb, filepath.Join(dir, "pods-diverse-"+n+".json"), list)
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	return Input{Pods: pods, NodePools: []*NodePool{{NodePool: np, InstanceTypes: types}}}
}

// addBusyNodes adds n initialized nodes of the benchmark type bench-it-3
// (3900m cpu, 8182Mi, 40 pods) of the NodePool "bench", spread over three
// zones, each running one pod that requests 2 cpu and 4Gi, and returns them.
func addBusyNodes(in *Input, n int) []*Node {
	nodes := make([]*Node, n)
	for i := range nodes {
		name := fmt.Sprintf("node-%d", i)
		nodes[i] = &Node{Name: name, Initialized: true,
			Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: fmt.Sprintf("test-zone-%d", 1+i%3),
				corev1.LabelInstanceTypeStable: "bench-it-3", karpv1.NodePoolLabelKey: "bench"},
			Allocatable: test.ResourceList("cpu", "3900m", "memory", "8182Mi", "pods", "40"),
			Pods:        []*corev1.Pod{test.MakePod(name+"-busy").Requests("cpu", "2", "memory", "4Gi").NodeName(name).Obj()}}
	}
	in.Nodes = append(in.Nodes, nodes...)
	return nodes
}

// solveBench runs solve b.N times, timed, with allocations reported, and
// reports the process's CPU time per run (GC included: steadier than wall
// time when other work shares the machine) as cpu-ms/op. It returns the
// last run's result.
func solveBench(b *testing.B, solve func() *Result) *Result {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	var res *Result
	cpu := processCPU()
	for i := 0; i < b.N; i++ {
		res = solve()
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
	return res
}

// processCPU is the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func readYAML(tb testing.TB, path string, into any) {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	unmarshal := yaml.Unmarshal
	if filepath.Ext(path) == ".json" {
		unmarshal = func(data []byte, into any, _ ...yaml.JSONOpt) error { return json.Unmarshal(data, into) }
	}
	if err := unmarshal(data, into); err != nil {
		tb.Fatalf("decoding %s: %v", path, err)
	}
}

// lowerBound is the fractional lower bound on cost: for each resource, the
// pods' total request priced at the cheapest $ per unit of capacity any
// offering sells; the bound is the largest of these (ignoring per-node
// overhead and packing).
func lowerBound(in Input) float64 {
	total := corev1.ResourceList{}
	for _, p := range in.Pods {
		for n, q := range scheduling.PodRequests(p) {
			if n == corev1.ResourcePods {
				continue
			}
			v := total[n]
			v.Add(q)
			total[n] = v
		}
	}
	best := 0.0
	for name, q := range total {
		cheapest := -1.0
		for _, np := range in.NodePools {
			for _, it := range np.InstanceTypes {
				c, ok := it.Capacity[name]
				if !ok || c.IsZero() {
					continue
				}
				for _, o := range it.Offerings {
					if per := o.Price / c.AsApproximateFloat64(); o.Available && (cheapest < 0 || per < cheapest) {
						cheapest = per
					}
				}
			}
		}
		if b := q.AsApproximateFloat64() * cheapest; cheapest >= 0 && b > best {
			best = b
		}
	}
	return best
}
