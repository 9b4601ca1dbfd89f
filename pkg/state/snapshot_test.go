package state_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestProvisioningSnapshotGivesConditionTaintsAGrace: an initialized karp
// node tainted unreachable a few seconds ago keeps its room for the
// provisioner; after the grace, or in the disruption Snapshot, it does not.
func TestProvisioningSnapshotGivesConditionTaintsAGrace(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)
	cluster := state.NewCluster(clk, nil)
	nc := test.MakeNodeClaim("nc").NodePool("pool").ProviderID("fake://nc").NodeName("n").
		Condition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", now.Add(-time.Hour)).Obj()
	dedicated := corev1.Taint{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}
	node := test.MakeNode("n").ProviderID("fake://nc").Label(karpv1.NodePoolLabelKey, "pool").Taint(dedicated).Obj()
	added := metav1.NewTime(now.Add(-10 * time.Second))
	node.Spec.Taints = append(node.Spec.Taints,
		corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &added},
		corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added})
	cluster.UpdateNodeClaim(nc)
	cluster.UpdateNode(node)
	prov, _ := cluster.ProvisioningSnapshot()
	if len(prov) != 1 || !prov[0].Initialized {
		t.Fatalf("provisioning snapshot = %+v, want one initialized node", prov)
	}
	if got := keysOf(prov[0].Taints); len(got) != 1 || got[0] != "dedicated" {
		t.Errorf("provisioning snapshot taints 10s after unreachable = %v, want only dedicated", got)
	}
	all, _ := cluster.Snapshot()
	if got := keysOf(all[0].Taints); len(got) != 3 {
		t.Errorf("disruption snapshot taints = %v, want all three", got)
	}

	clk.Step(state.NodeConditionTaintGrace)
	prov, _ = cluster.ProvisioningSnapshot()
	if got := keysOf(prov[0].Taints); len(got) != 3 {
		t.Errorf("provisioning snapshot taints after the grace = %v, want all three", got)
	}
}

func keysOf(taints []corev1.Taint) []string {
	var out []string
	for _, t := range taints {
		out = append(out, t.Key)
	}
	return out
}

// TestSnapshotsIgnoreTheBatchHold: karp lifts its own batch hold, so the
// held node's room counts in both snapshots; its other taints stay.
func TestSnapshotsIgnoreTheBatchHold(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)
	cluster := state.NewCluster(clk, nil)
	nc := test.MakeNodeClaim("nc").NodePool("pool").ProviderID("fake://nc").NodeName("n").
		Condition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", now).Obj()
	dedicated := corev1.Taint{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}
	node := test.MakeNode("n").ProviderID("fake://nc").Label(karpv1.NodePoolLabelKey, "pool").
		Taint(karpv1.BatchHoldNoScheduleTaint).Taint(dedicated).Obj()
	cluster.UpdateNodeClaim(nc)
	cluster.UpdateNode(node)
	prov, _ := cluster.ProvisioningSnapshot()
	all, _ := cluster.Snapshot()
	for name, nodes := range map[string][]*simulation.Node{"provisioning": prov, "disruption": all} {
		if got := keysOf(nodes[0].Taints); len(got) != 1 || got[0] != "dedicated" {
			t.Errorf("%s snapshot taints = %v, want only dedicated", name, got)
		}
	}
	if sn := cluster.Nodes(); len(sn) != 1 || len(sn[0].Node.Spec.Taints) != 2 {
		t.Errorf("state's own copy of the node lost a taint: %+v", sn)
	}
	// A hold still there long after initialization is a fault: the node
	// counts as tainted again rather than keep pods waiting on it.
	clk.Step(state.BatchHoldGrace)
	prov, _ = cluster.ProvisioningSnapshot()
	if got := keysOf(prov[0].Taints); len(got) != 2 {
		t.Errorf("provisioning snapshot taints long after initialization = %v, want the hold back", got)
	}
}

// TestRegisteringNodeTakesWhatItDoesNotReportYetFromItsNodeClaim: until its
// NodeClaim is Initialized, a Node whose device plugin has not advertised
// its GPU yet (missing, or zero) keeps the NodeClaim's GPU, so the pod it
// was launched for still fits it; what the Node does report wins, and once
// Initialized the Node's own figures are all there is.
func TestRegisteringNodeTakesWhatItDoesNotReportYetFromItsNodeClaim(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const gpu = corev1.ResourceName("nvidia.com/gpu")
	claim := func(initialized bool) *karpv1.NodeClaim {
		w := test.MakeNodeClaim("nc").NodePool("pool").ProviderID("fake://nc").NodeName("n").
			Capacity(test.ResourceList("cpu", "8", "memory", "32Gi", string(gpu), "1")).
			Allocatable(test.ResourceList("cpu", "7910m", "memory", "30Gi", string(gpu), "1"))
		if initialized {
			w = w.Condition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", now)
		}
		return w.Obj()
	}
	for name, tc := range map[string]struct {
		node        *corev1.Node
		initialized bool
		want        corev1.ResourceList
	}{
		"gpu not listed yet": {
			node: test.MakeNode("n").ProviderID("fake://nc").Allocatable("cpu", "7900m", "memory", "29Gi").Obj(),
			want: test.ResourceList("cpu", "7900m", "memory", "29Gi", string(gpu), "1"),
		},
		"gpu listed as zero": {
			node: test.MakeNode("n").ProviderID("fake://nc").Allocatable("cpu", "7900m", "memory", "29Gi", string(gpu), "0").Obj(),
			want: test.ResourceList("cpu", "7900m", "memory", "29Gi", string(gpu), "1"),
		},
		"initialized: the node's own": {
			node:        test.MakeNode("n").ProviderID("fake://nc").Allocatable("cpu", "7900m", "memory", "29Gi", string(gpu), "0").Obj(),
			initialized: true,
			want:        test.ResourceList("cpu", "7900m", "memory", "29Gi", string(gpu), "0"),
		},
	} {
		t.Run(name, func(t *testing.T) {
			cluster := state.NewCluster(clocktesting.NewFakeClock(now), nil)
			cluster.UpdateNodeClaim(claim(tc.initialized))
			cluster.UpdateNode(tc.node)
			nodes, _ := cluster.ProvisioningSnapshot()
			if len(nodes) != 1 {
				t.Fatalf("%d nodes, want 1", len(nodes))
			}
			for res, want := range tc.want {
				if got := nodes[0].Allocatable[res]; got.Cmp(want) != 0 {
					t.Errorf("allocatable %s = %s, want %s (all: %v)", res, got.String(), want.String(), nodes[0].Allocatable)
				}
			}
			if len(nodes[0].Allocatable) != len(tc.want) {
				t.Errorf("allocatable = %v, want %v", nodes[0].Allocatable, tc.want)
			}
		})
	}
}
