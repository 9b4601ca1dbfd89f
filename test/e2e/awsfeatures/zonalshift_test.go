package awsfeatures_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/zonalshift"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
	"github.com/karp-autoscaler/karp/test/e2e/framework/awsenv"
)

// testZonalShift runs one pod on an on-demand NodePool in zones b and c,
// then shifts the cluster away from the zone its node landed in with ARC
// (over the wire, as `aws arc-zonal-shift start-zonal-shift` would): karp
// publishes ZonalShiftActive on the NodePool, and the nodes of two new
// pods land in the other zone. Cancelling the shift publishes
// ZonalShiftCleared.
func testZonalShift(t *testing.T, e *awsenv.Env) {
	const name = "e2e-zonal"
	zones := []string{e.Sim.Zones()[1].Name, e.Sim.Zones()[2].Name}
	e.SetUp(t, e.NodeClass(name), awsenv.NodePool(name).
		Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zones...).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand))
	d := framework.SpreadOverHosts(framework.Deployment(name, name, name, 1, "500m"))
	framework.Create(t, e.Client, d)
	pods := e.WaitAvailable(t, name, 1)
	first := e.Node(t, pods[0].Spec.NodeName)
	shifted := first.Labels[corev1.LabelTopologyZone]

	// 1. The shift is noticed (within the controller's 30s period).
	shift, err := e.Sim.StartZonalShift(shifted, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cancelled := false
	t.Cleanup(func() {
		if !cancelled {
			e.Sim.CancelZonalShift(shift)
		}
	})
	framework.Eventually(t, zonalshift.Period+time.Minute, func(context.Context) (bool, string) {
		return hasEvent(t, e.Client, "NodePool", name, zonalshift.ReasonZonalShiftActive), "no ZonalShiftActive event on NodePool " + name
	})

	// 2. New pods' nodes land away from the shifted zone.
	framework.Mutate(t, e.Client, d, func() { d.Spec.Replicas = ptr.To[int32](3) })
	available := e.WaitAvailable(t, name, 3)
	for _, p := range available {
		if p.Spec.NodeName == first.Name {
			continue
		}
		if zone := e.Node(t, p.Spec.NodeName).Labels[corev1.LabelTopologyZone]; zone == shifted {
			t.Errorf("pod %s runs on node %s in the shifted zone %s", p.Name, p.Spec.NodeName, shifted)
		}
	}

	// 3. Cancelled, the shift clears.
	e.Sim.CancelZonalShift(shift)
	cancelled = true
	framework.Eventually(t, zonalshift.Period+time.Minute, func(context.Context) (bool, string) {
		return hasEvent(t, e.Client, "NodePool", name, zonalshift.ReasonZonalShiftCleared), "no ZonalShiftCleared event on NodePool " + name
	})
}
