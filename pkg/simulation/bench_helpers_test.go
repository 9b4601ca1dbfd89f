package simulation

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/catalog"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
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
