package simulation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestHeadroomPodsGoAfterRealPods: a buffer's virtual pods (Input.Headroom)
// are placed after the real pods, even when the solver's size order would
// put them first, so a buffer never takes room a real pod could use.
func TestHeadroomPodsGoAfterRealPods(t *testing.T) {
	small := makeType("general-small", "amd64", 0.10, "cpu", "2", "memory", "4Gi", "pods", "10")
	pool := withTypes(test.MakeNodePool("default").Obj(), onDemandOnly([]*scheduling.InstanceType{small})...)
	// Node a has 1.5 cpu free: one of the pods below, not both.
	nodes := func() []*Node { return []*Node{poolNode("a", small, cpuPod("bound", "500m"))} }
	real, buffer := cpuPod("real", "1"), cpuPod("buffer", "1500m")
	cases := map[string]struct {
		headroom map[types.UID]bool
		// wantOnA is the pod placed on node a; the other gets a new NodeClaim.
		wantOnA string
	}{
		"without headroom the larger pod goes first": {wantOnA: "buffer"},
		"headroom pods wait for the real ones":       {headroom: map[types.UID]bool{buffer.UID: true}, wantOnA: "real"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := Input{Nodes: nodes(), Pods: []*corev1.Pod{real.DeepCopy(), buffer.DeepCopy()}, NodePools: []*NodePool{pool}, Headroom: tc.headroom}
			res := Solve(t.Context(), in)
			if len(res.PodErrors) != 0 {
				t.Fatalf("pod errors: %v", res.PodErrors)
			}
			var onA []string
			for _, ep := range res.ExistingNodes {
				for _, p := range ep.Pods {
					onA = append(onA, p.Name)
				}
			}
			if len(onA) != 1 || onA[0] != tc.wantOnA || len(res.NodeClaims) != 1 {
				t.Errorf("on node a: %v, new NodeClaims: %d; want only %s on a and one NodeClaim", onA, len(res.NodeClaims), tc.wantOnA)
			}
		})
	}
}

// TestConsolidationKeepsRoomForHeadroom: a node holding only a buffer's
// room is not deleted while the buffer's pods need it, and a node whose
// pods the room would take is not consolidated into it.
func TestConsolidationKeepsRoomForHeadroom(t *testing.T) {
	small := makeType("general-small", "amd64", 0.10, "cpu", "2", "memory", "4Gi", "pods", "10")
	pool := withTypes(test.MakeNodePool("default").Obj(), onDemandOnly([]*scheduling.InstanceType{small})...)
	opts := ConsolidationOptions{RequireCheaper: true}
	buffer := cpuPod("buffer", "1500m")
	headroom := map[types.UID]bool{buffer.UID: true}
	nodes := func() []*Node { return []*Node{poolNode("a", small, cpuPod("p1", "1")), poolNode("empty", small)} }
	emptyOnly := []ConsolidationCandidate{{Name: "empty", Price: 0.10}}
	without := Input{Nodes: nodes(), NodePools: []*NodePool{pool}}
	if got := Consolidate(t.Context(), without, emptyOnly, opts); got.Decision != ConsolidationDelete {
		t.Fatalf("without a buffer: decision = %s (%s), want delete", got.Decision, got.Reason)
	}
	with := Input{Nodes: nodes(), Pods: []*corev1.Pod{buffer}, Headroom: headroom, NodePools: []*NodePool{pool}}
	if got := Consolidate(t.Context(), with, emptyOnly, opts); got.Decision != ConsolidationNone {
		t.Errorf("with a buffer pod only the empty node holds: decision = %s (savings %v), want none", got.Decision, got.Savings)
	}
	// Node a's pod could move onto the empty node, but the buffer holds it.
	aOnly := []ConsolidationCandidate{{Name: "a", Price: 0.10}}
	if got := Consolidate(t.Context(), with, aOnly, opts); got.Decision != ConsolidationNone {
		t.Errorf("moving a's pod into the buffer's room: decision = %s (savings %v), want none", got.Decision, got.Savings)
	}
}
