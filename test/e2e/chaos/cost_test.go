package chaos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// costFactor is how far above `karp simulate`'s $/hour for the final
// workload the cluster's $/hour may end: simulate packs the whole workload
// at once, while the cluster got there through scale-out, scale-down,
// drift, expiry and interruptions, and consolidation only replaces a node
// when that is cheaper by itself.
const costFactor = 1.5

// pricePerHour sums the price of each NodeClaim's offering (instance type,
// zone, capacity type) in the catalog the kwok provider uses.
func pricePerHour(claims []karpv1.NodeClaim) (float64, error) {
	byPool, err := pricePerHourByPool(claims)
	total := 0.0
	for _, p := range byPool {
		total += p
	}
	return total, err
}

// pricePerHourByPool is pricePerHour per NodePool (the NodeClaims'
// karpenter.sh/nodepool label).
func pricePerHourByPool(claims []karpv1.NodeClaim) (map[string]float64, error) {
	types, err := kwok.LoadInstanceTypes("", nil)
	if err != nil {
		return nil, err
	}
	prices := map[string]float64{}
	for _, it := range types {
		for _, o := range it.Offerings {
			prices[it.Name+"/"+o.Zone+"/"+o.CapacityType] = o.Price
		}
	}
	byPool := map[string]float64{}
	for _, nc := range claims {
		key := nc.Labels[corev1.LabelInstanceTypeStable] + "/" + nc.Labels[corev1.LabelTopologyZone] + "/" + nc.Labels[karpv1.CapacityTypeLabelKey]
		price, ok := prices[key]
		if !ok {
			return nil, fmt.Errorf("NodeClaim %s: no price for offering %s", nc.Name, key)
		}
		byPool[nc.Labels[karpv1.NodePoolLabelKey]] += price
	}
	return byPool, nil
}

// simulated is what `karp simulate` answers for the final workload.
type simulated struct {
	// total is its $/hour; byPool the same per NodePool.
	total  float64
	byPool map[string]float64
	// pending is how many pods it could not place.
	pending int
}

// simulatePricePerHour writes objects to a manifest file, runs `karp
// simulate -o json` on it and returns its $/hour, in total and per
// NodePool, and how many pods it could not place.
func simulatePricePerHour(t *testing.T, objects []runtime.Object) simulated {
	t.Helper()
	var manifest bytes.Buffer
	for _, obj := range objects {
		raw, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		manifest.WriteString("---\n")
		manifest.Write(raw)
	}
	path := filepath.Join(t.TempDir(), "final-workload.yaml")
	if err := os.WriteFile(path, manifest.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(framework.KarpBinary(t), "simulate", "-o", "json", "-f", path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 3) {
		t.Fatalf("karp simulate: %v\n%s", err, stderr.String())
	}
	var rep struct {
		NodeClaims []struct {
			NodePool     string  `json:"nodePool"`
			PricePerHour float64 `json:"pricePerHour"`
		} `json:"nodeClaims"`
		TotalPricePerHour float64           `json:"totalPricePerHour"`
		Unschedulable     []json.RawMessage `json:"unschedulable"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("karp simulate output: %v\n%s", err, stdout.String())
	}
	if len(rep.Unschedulable) > 0 {
		table, _ := exec.Command(framework.KarpBinary(t), "simulate", "-f", path).CombinedOutput()
		t.Logf("karp simulate on the final workload:\n%s\nmanifest:\n%s", table, manifest.String())
	}
	out := simulated{total: rep.TotalPricePerHour, byPool: map[string]float64{}, pending: len(rep.Unschedulable)}
	for _, nc := range rep.NodeClaims {
		out.byPool[nc.NodePool] += nc.PricePerHour
	}
	return out
}

// costByPool is the per-NodePool line of the figures: each pool's $/hour
// against karp simulate's, with their ratio, pools in name order.
func costByPool(live, sim map[string]float64) string {
	names := map[string]bool{}
	for p := range live {
		names[p] = true
	}
	for p := range sim {
		names[p] = true
	}
	sorted := make([]string, 0, len(names))
	for p := range names {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	var parts []string
	for _, p := range sorted {
		ratio := "-"
		if sim[p] > 0 {
			ratio = fmt.Sprintf("%.2f", live[p]/sim[p])
		}
		parts = append(parts, fmt.Sprintf("%s %.4f/%.4f (%s, +%.4f)", p, live[p], sim[p], ratio, live[p]-sim[p]))
	}
	return strings.Join(parts, "; ")
}
