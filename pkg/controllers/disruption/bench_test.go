package disruption

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/catalog"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
)

// BenchmarkConsolidationPass measures one consolidation decision (the
// methods' search, no API calls) over a cluster of about 500 nodes running
// the 5,000 pods of the shared diverse benchmark, packed by the solver onto
// instance types of at most 32 vCPU. Nodes are tightly packed, so the
// search finds little and single-node consolidation visits every
// candidate: the worst case for a pass.
func BenchmarkConsolidationPass(b *testing.B) {
	c, w := benchCluster(b, 1)
	b.Run("as-packed", func(b *testing.B) { benchPass(b, c, w) })
	// Without launchable capacity every move must be a delete, which a
	// packed cluster never allows: single-node consolidation simulates
	// every candidate before giving up.
	pools := c.simulator.in.NodePools
	c.simulator.in.NodePools = nil
	b.Run("nothing-to-do", func(b *testing.B) { benchPass(b, c, w) })
	c.simulator.in.NodePools = pools
}

func benchPass(b *testing.B, c *Controller, w *world) {
	b.ReportAllocs()
	b.ResetTimer()
	var cmd Command
	for i := 0; i < b.N; i++ {
		c.memo = ""
		var err error
		cmd, err = c.compute(b.Context(), w)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(len(w.stateNodes)), "nodes")
	b.ReportMetric(float64(len(w.candidates)), "candidates")
	b.ReportMetric(float64(len(cmd.Candidates)), "disrupted")
	b.Logf("decision: %s", cmd.String())
}

// benchCluster packs the diverse pods with the solver and loads the result
// into a cluster state as running nodes, copies times over (each copy's
// nodes and pods under their own names).
func benchCluster(b *testing.B, copies int) (*Controller, *world) {
	b.Helper()
	dir := fixtures.Bench(b, "")
	all, err := catalog.LoadFile(filepath.Join(dir, "instance-types-400.json"), catalog.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	var its []*scheduling.InstanceType
	for _, it := range all {
		if cpu := it.Capacity[corev1.ResourceCPU]; cpu.Value() <= 32 {
			its = append(its, it)
		}
	}
	np := &karpv1.NodePool{}
	readInto(b, filepath.Join(dir, "nodepool.yaml"), np)
	np.UID = "bench-uid"
	np.Spec.Disruption = karpv1.Disruption{ConsolidateAfter: karpv1.NewNillableDuration(0),
		ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized, Budgets: []karpv1.Budget{{Nodes: "100%"}}}
	for _, ct := range []string{karpv1.ConditionTypeValidationSucceeded, karpv1.ConditionTypeNodeClassReady} {
		np.StatusConditions().SetTrue(ct)
	}
	pods := &corev1.PodList{}
	readInto(b, filepath.Join(dir, "pods-diverse-5000.json"), pods)
	in := simulation.Input{NodePools: []*simulation.NodePool{{NodePool: np, InstanceTypes: its}}}
	for i := range pods.Items {
		in.Pods = append(in.Pods, &pods.Items[i])
	}
	res := simulation.Solve(b.Context(), in)
	clk := clocktesting.NewFakeClock(time.Now().Add(2 * time.Hour))
	cluster := state.NewCluster(clk, nil)
	cluster.UpdateNodePool(np)
	for k := range copies {
		for i, nc := range res.NodeClaims {
			name := fmt.Sprintf("node-%d", i)
			if k > 0 {
				name = fmt.Sprintf("node-%d-%d", k, i)
			}
			loadNode(cluster, name, nc, clk.Now().Add(-time.Hour))
		}
	}
	provider := fake.New(its...)
	c := NewController(nil, provider, cluster, nil, clk, DefaultOptions(), simulation.Options{
		PreferencePolicy: simulation.PreferencePolicyRespect, MinValuesPolicy: simulation.MinValuesPolicyStrict})
	w := c.buildWorld(b.Context(), nil)
	nodes, _ := cluster.Snapshot()
	c.simulator.in = simulation.Input{Nodes: nodes, NodePools: in.NodePools, Options: c.simulator.opts}
	return c, w
}

// loadNode records a running node for a solver NodeClaim: NodeClaim, Node
// and bound pods, initialized at initialized.
func loadNode(cluster *state.Cluster, name string, nc *simulation.NodeClaim, initialized time.Time) {
	labels := map[string]string{karpv1.NodePoolLabelKey: nc.NodePool.Name, corev1.LabelHostname: name,
		corev1.LabelInstanceTypeStable: nc.InstanceType.Name, corev1.LabelTopologyZone: nc.Offering.Zone,
		karpv1.CapacityTypeLabelKey: nc.Offering.CapacityType}
	for k, v := range nc.InstanceType.Requirements.Labels() {
		if _, ok := labels[k]; !ok {
			labels[k] = v
		}
	}
	claim := test.MakeNodeClaim(name).Labels(labels).ProviderID("fake://" + name).NodeName(name).Obj()
	claim.CreationTimestamp = metav1.NewTime(initialized)
	for _, ct := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized} {
		claim.StatusConditions().SetTrue(ct)
	}
	node := test.MakeNode(name).Labels(labels).ProviderID("fake://" + name).Obj()
	node.Status.Capacity, node.Status.Allocatable = nc.InstanceType.Capacity, nc.InstanceType.Allocatable
	cluster.UpdateNodeClaim(claim)
	cluster.UpdateNode(node)
	for i, p := range nc.Pods {
		pod := p.DeepCopy()
		pod.Spec.NodeName = name
		// Pods are keyed by name in the cluster state: a copy's are its own.
		pod.Name = fmt.Sprintf("%s-%s-%d", pod.Name, name, i)
		pod.Status.Phase = corev1.PodRunning
		pod.Status.StartTime = &metav1.Time{Time: initialized}
		pod.UID = types.UID(fmt.Sprintf("%s-%d", name, i))
		pod.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", UID: "rs"}}
		cluster.UpdatePod(pod)
	}
}

func readInto(b *testing.B, path string, into any) {
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, into); err != nil {
		b.Fatal(err)
	}
}
