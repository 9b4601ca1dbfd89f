package simulation

import (
	"fmt"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// TestClusterLimitsHoldForAnyLaunch solves random clusters (one to three
// NodePools, existing nodes) and admits the NodeClaims under random
// cluster-wide limits: whichever listed instance type the provider
// launches for each admitted NodeClaim, the NodePools' nodes together stay
// within every limit, and every pod of a NodeClaim left out is told which
// limit holds it.
func TestClusterLimitsHoldForAnyLaunch(t *testing.T) {
	for seed := int64(1); seed <= 300; seed++ {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			in := randomCluster(rng)
			in.ClusterLimits = corev1.ResourceList{}
			if rng.Intn(3) > 0 {
				in.ClusterLimits[corev1.ResourceCPU] = *resource.NewQuantity(int64(4+rng.Intn(40)), resource.DecimalSI)
			}
			if rng.Intn(2) == 0 {
				in.ClusterLimits["nodes"] = *resource.NewQuantity(int64(rng.Intn(6)), resource.DecimalSI)
			}
			res := Solve(t.Context(), in)
			planned := len(res.NodeClaims)
			before := len(res.PodErrors)
			AdmitLimits(in, res)

			// Worst case: every admitted NodeClaim launches its largest type.
			used := corev1.ResourceList{}
			nodes := int64(0)
			for _, n := range in.Nodes {
				if n.Labels[karpv1.NodePoolLabelKey] != "" {
					addResources(used, n.Capacity)
					nodes++
				}
			}
			existingCPU := used.Cpu().DeepCopy()
			existingNodes := nodes
			for _, nc := range res.NodeClaims {
				addResources(used, MaximumCapacity(nc.InstanceTypes))
				nodes++
			}
			if limit, ok := in.ClusterLimits[corev1.ResourceCPU]; ok && len(res.NodeClaims) > 0 {
				if got := used[corev1.ResourceCPU]; got.Cmp(limit) > 0 && got.Cmp(existingCPU) != 0 {
					t.Errorf("admitted NodeClaims may bring cpu to %s, over the cluster limit %s", got.String(), limit.String())
				}
			}
			if limit, ok := in.ClusterLimits["nodes"]; ok && nodes > max(limit.Value(), existingNodes) {
				t.Errorf("%d nodes with the admitted NodeClaims, over the cluster limit %d", nodes, limit.Value())
			}
			dropped := planned - len(res.NodeClaims)
			if dropped > 0 && len(res.PodErrors) == before {
				t.Errorf("%d NodeClaims left out and no pod told why", dropped)
			}
			for _, pe := range res.PodErrors[before:] {
				if len(pe.Status.Reasons) != 1 || (pe.Status.Reasons[0].Code != scheduling.ReasonClusterLimit && pe.Status.Reasons[0].Code != scheduling.ReasonNodePoolLimit) {
					t.Errorf("pod %s left out with %q, want the limit named", pe.Pod.Name, pe.Status.Message())
				}
			}
		})
	}
}
