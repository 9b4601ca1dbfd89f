package simulation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestConsolidateSkipsSettlingDestinations: a node still inside its
// consolidateAfter window takes no pod of a consolidation candidate, so it
// does not make the candidate deletable; pending pods may still use it.
func TestConsolidateSkipsSettlingDestinations(t *testing.T) {
	small := makeType("general-small", "amd64", 0.10, "cpu", "2", "memory", "4Gi", "pods", "10")
	types := onDemandOnly([]*scheduling.InstanceType{small})
	pool := withTypes(test.MakeNodePool("default").Obj(), types...)
	candidate := []ConsolidationCandidate{{Name: "a", Price: 0.10, CapacityType: "on-demand"}}
	settled := func(settling bool) []*Node {
		b := poolNode("b", small, cpuPod("p2", "500m"))
		b.Settling = settling
		return []*Node{poolNode("a", small, cpuPod("p1", "500m")), b}
	}

	got := Consolidate(t.Context(), Input{Nodes: settled(false), NodePools: []*NodePool{pool}}, candidate, ConsolidationOptions{RequireCheaper: true})
	if got.Decision != ConsolidationDelete {
		t.Fatalf("settled destination: decision %s (%s), want delete", got.Decision, got.Reason)
	}

	got = Consolidate(t.Context(), Input{Nodes: settled(true), NodePools: []*NodePool{pool}}, candidate, ConsolidationOptions{RequireCheaper: true})
	if got.Decision == ConsolidationDelete {
		t.Fatalf("settling destination: decision delete, want the candidate kept (no cheaper move)")
	}
	for _, ep := range got.Result.ExistingNodes {
		if ep.Node.Name == "b" {
			t.Errorf("candidate pods %v placed on settling node b", ep.Pods)
		}
	}

	// A pending pod may still take the settling node's room.
	in := Input{Nodes: settled(true)[1:], NodePools: []*NodePool{pool}, Pods: []*corev1.Pod{cpuPod("pending", "1")}}
	res := Solve(t.Context(), in)
	if len(res.ExistingNodes) == 0 {
		t.Errorf("pending pod not placed on an existing node: %d new NodeClaims", len(res.NodeClaims))
	}
}

// TestConsolidateLetsWaitingPodsUseSettlingNodes: the settling rule keeps
// only the candidates' own pods off a settling node; a pending pod that
// would first have landed on the candidate may still move there.
func TestConsolidateLetsWaitingPodsUseSettlingNodes(t *testing.T) {
	small := makeType("general-small", "amd64", 0.10, "cpu", "2", "memory", "4Gi", "pods", "10")
	pool := withTypes(test.MakeNodePool("default").Obj(), onDemandOnly([]*scheduling.InstanceType{small})...)
	b := poolNode("b", small)
	b.Settling = true
	in := Input{Nodes: []*Node{poolNode("a", small), b}, NodePools: []*NodePool{pool}, Pods: []*corev1.Pod{cpuPod("pending", "1")}}
	got := Consolidate(t.Context(), in, []ConsolidationCandidate{{Name: "a", Price: 0.10, CapacityType: "on-demand"}},
		ConsolidationOptions{RequireCheaper: true})
	if got.Decision != ConsolidationDelete {
		t.Fatalf("decision %s (%s), want delete: the pending pod fits on settling node b", got.Decision, got.Reason)
	}
}
