package simulation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestConsolidationLeavesRoomForWaitingPods: pending pods and the pods of
// other nodes being deleted are placed before the candidates' pods, so a
// consolidation never takes the room they need. Without them, node a's
// pod would move to node b's free cpu and a would go; with a pod waiting
// for that cpu, a stays.
func TestConsolidationLeavesRoomForWaitingPods(t *testing.T) {
	small := makeType("general-small", "amd64", 0.10, "cpu", "2", "memory", "4Gi", "pods", "10")
	pool := withTypes(test.MakeNodePool("default").Obj(), onDemandOnly([]*scheduling.InstanceType{small})...)
	candidates := []ConsolidationCandidate{{Name: "a", Price: 0.10}}
	opts := ConsolidationOptions{RequireCheaper: true}
	nodes := func() []*Node {
		return []*Node{poolNode("a", small, cpuPod("p1", "1")), poolNode("b", small, cpuPod("p2", "1"))}
	}
	if got := Consolidate(t.Context(), Input{Nodes: nodes(), NodePools: []*NodePool{pool}}, candidates, opts); got.Decision != ConsolidationDelete {
		t.Fatalf("without waiting pods: decision = %s (%s), want delete", got.Decision, got.Reason)
	}
	// A pending pod that fits nowhere is not the candidate's concern.
	stuck := Input{Nodes: nodes(), Pods: []*corev1.Pod{cpuPod("huge", "3")}, NodePools: []*NodePool{pool}}
	if got := Consolidate(t.Context(), stuck, candidates, opts); got.Decision != ConsolidationDelete {
		t.Errorf("with a pending pod that fits nowhere: decision = %s (%s), want delete", got.Decision, got.Reason)
	}
	deleting := poolNode("c", small, cpuPod("r1", "1"))
	deleting.MarkedForDeletion = true
	cases := map[string]Input{
		"a pending pod":                       {Nodes: nodes(), Pods: []*corev1.Pod{cpuPod("q1", "1")}, NodePools: []*NodePool{pool}},
		"a pod of another node being deleted": {Nodes: append(nodes(), deleting), NodePools: []*NodePool{pool}},
	}
	for name, in := range cases {
		in := in
		t.Run(name, func(t *testing.T) {
			got := Consolidate(t.Context(), in, candidates, opts)
			if got.Decision != ConsolidationNone {
				t.Errorf("decision = %s (savings %v), want none: the waiting pod needs node b's free cpu", got.Decision, got.Savings)
			}
		})
	}
}
