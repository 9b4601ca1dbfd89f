package disruption_test

import (
	"context"
	"fmt"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// Two half-used nodes each run a pod with a volume of the same CSI driver.
// Either pod fits on the other node, so consolidation deletes one, unless
// the nodes' CSINodes allow a single volume each: then neither pod can
// move, and a same-priced replacement saves nothing, so both stay.
func TestConsolidationRespectsVolumeLimits(t *testing.T) {
	for limit, wantGone := range map[int32]int{1: 0, 2: 1} {
		t.Run(fmt.Sprintf("limit %d", limit), func(t *testing.T) {
			h := newHarness(t)
			h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "100%"}).Obj())
			for _, name := range []string{"a", "b"} {
				claim := fmt.Sprintf("data-%s-%d", name, limit)
				h.zonalVolume(claim, zone)
				csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
					{Name: "disk.example.com", NodeID: "i-" + name, Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To(limit)}}}}}
				h.create(csiNode)
				t.Cleanup(func() { _ = env.Client.Delete(context.WithoutCancel(h.ctx), csiNode) })
				h.runningNode(name, nodeOpts{it: smallType}, withClaim(pod("p-"+name, "500m"), claim))
			}
			h.decide()
			gone := 0
			for _, n := range []string{"a", "b"} {
				if h.gone(n) {
					gone++
				}
			}
			if gone != wantGone {
				t.Fatalf("%d nodes deleted, want %d (a: %+v, b: %+v)", gone, wantGone, h.blocked("a"), h.blocked("b"))
			}
			if n := len(h.replacements("a", "b")); n != 0 {
				t.Errorf("%d replacements launched", n)
			}
		})
	}
}
