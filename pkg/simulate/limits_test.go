package simulate

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestBindingLimitPlacesMostPods is the binding-limit example: NodePool arm
// (weight 20, cpu limit 64, arm64, fewer than 33 vCPU) and general (weight
// 10, amd64, unlimited); 60 pods of 2 cpu / 4Gi that require arm64 and 40
// of 500m / 1Gi with preferred hostname anti-affinity. Eight 8-vCPU nodes
// hold three arm pods each (24); two 32-vCPU nodes hold fifteen each (30)
// within the same limit. Every api pod must be placed, and the arm
// NodeClaims must stay within the limit whichever listed type launches.
func TestBindingLimitPlacesMostPods(t *testing.T) {
	rep := simulateFiles(t, testdata("limit-binding-pools.yaml"), testdata("limit-binding-work.yaml"))
	armPods, armCPU := 0, resource.Quantity{}
	for _, nc := range rep.NodeClaims {
		if nc.NodePool != "arm" {
			continue
		}
		for _, p := range nc.Pods {
			if strings.HasPrefix(p, "default/batch-arm-") {
				armPods++
			}
		}
		largest := resource.Quantity{}
		for _, name := range nc.InstanceTypeOptions {
			if c := instanceType(t, name).Capacity[corev1.ResourceCPU]; c.Cmp(largest) > 0 {
				largest = c
			}
		}
		armCPU.Add(largest)
	}
	if armPods < 30 {
		t.Errorf("%d arm-only pods placed, want at least 30", armPods)
	}
	for _, u := range rep.Unschedulable {
		if !strings.HasPrefix(u.Pod, "default/batch-arm-") {
			t.Errorf("pod %s pending: %q", u.Pod, u.Reasons)
		}
	}
	if limit := resource.MustParse("64"); armCPU.Cmp(limit) > 0 {
		t.Errorf("NodePool arm: %s cpu with the largest listed types, over the limit 64", armCPU.String())
	}
	t.Logf("%d arm-only pods placed in NodePool arm (%s cpu at most), %d pods pending", armPods, armCPU.String(), len(rep.Unschedulable))
}
