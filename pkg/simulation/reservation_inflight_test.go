package simulation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestReservationHeldByAnUnlaunchedNodeClaim: a NodeClaim an earlier pass
// pinned to a capacity reservation holds one of its places until it
// launches (the provider's count only drops at launch), so the next pass
// does not pin a second NodeClaim to a reservation with room for one; once
// launched, the provider's count already reflects it.
func TestReservationHeldByAnUnlaunchedNodeClaim(t *testing.T) {
	for name, tc := range map[string]struct {
		launched     bool
		wantReserved bool
	}{
		"not launched yet: the reservation is taken": {launched: false, wantReserved: false},
		"launched: the provider counts it":           {launched: true, wantReserved: true},
	} {
		t.Run(name, func(t *testing.T) {
			types := testTypes()
			types[0].Offerings = append(types[0].Offerings, &scheduling.Offering{Zone: zoneA, CapacityType: karpv1.CapacityTypeReserved,
				Price: 0.01, Available: true, ReservationID: "r-1", ReservationCapacity: 1})
			types[0].RefreshOfferingRequirements()
			// The in-flight NodeClaim of the earlier pass, tainted so the new
			// pod cannot join it.
			inFlight := &Node{Name: "inflight", Labels: map[string]string{karpv1.NodePoolLabelKey: "default"},
				Requirements: scheduling.NewRequirements(
					scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, types[0].Name),
					scheduling.NewRequirement(scheduling.LabelCapacityType, corev1.NodeSelectorOpIn, karpv1.CapacityTypeReserved),
					scheduling.NewRequirement(scheduling.LabelReservationID, corev1.NodeSelectorOpIn, "r-1")),
				Taints:   []corev1.Taint{{Key: "example.com/batch", Effect: corev1.TaintEffectNoSchedule}},
				Capacity: types[0].Capacity, Allocatable: types[0].Allocatable, Launched: tc.launched}
			in := Input{Nodes: []*Node{inFlight}, Pods: []*corev1.Pod{cpuPod("p", "1")},
				NodePools: []*NodePool{withTypes(test.MakeNodePool("default").Obj(), types...)}}
			res := Solve(t.Context(), in)
			if len(res.NodeClaims) != 1 {
				t.Fatalf("%d NodeClaims, want 1 (errors %+v)", len(res.NodeClaims), res.PodErrors)
			}
			if got := res.NodeClaims[0].Offering.ReservationID == "r-1"; got != tc.wantReserved {
				t.Errorf("new NodeClaim pinned to r-1 = %v, want %v", got, tc.wantReserved)
			}
		})
	}
}
