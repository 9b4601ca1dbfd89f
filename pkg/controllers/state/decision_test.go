package state_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestUndecidedGaugeLastsUntilDecidedBoundOrGone checks which pods carry
// karpenter_pods_provisioning_scheduling_undecided_time_seconds: pods the
// provisioner saw pending and has not decided about, each measured from
// when it saw them; a decision, a binding or the pod's deletion drops the
// series, and a new pod of the same name starts from its own sighting.
func TestUndecidedGaugeLastsUntilDecidedBoundOrGone(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	cluster := state.NewCluster(clk, env.Client)
	for _, name := range []string{"decided", "bound", "deleted", "waiting", "renamed"} {
		pod := test.MakePod(name).Obj()
		cluster.UpdatePod(pod)
		cluster.AckPods(pod)
	}
	// Seen once more later: still measured from the first sighting.
	clk.Step(2 * time.Second)
	cluster.AckPods(test.MakePod("waiting").Obj())
	clk.Step(3 * time.Second)

	cluster.MarkSchedulingDecisions(test.MakePod("decided").Obj())
	cluster.UpdatePod(test.MakePod("bound").NodeName("n").Obj())
	cluster.DeletePod(types.NamespacedName{Namespace: "default", Name: "deleted"})
	// Deleted and created again under the same name, seen 0s ago.
	recreated := test.MakePod("renamed").UID("uid-renamed-2").Obj()
	cluster.UpdatePod(recreated)
	cluster.AckPods(recreated)

	want := `
# HELP karpenter_pods_provisioning_scheduling_undecided_time_seconds The time from when Karpenter has seen a pod without making a scheduling decision for the pod. Note: this calculated from a point in memory, not by the pod creation timestamp.
# TYPE karpenter_pods_provisioning_scheduling_undecided_time_seconds gauge
karpenter_pods_provisioning_scheduling_undecided_time_seconds{name="renamed",namespace="default"} 0
karpenter_pods_provisioning_scheduling_undecided_time_seconds{name="waiting",namespace="default"} 5
`
	if err := testutil.CollectAndCompare(state.NewCollector(cluster), strings.NewReader(want),
		"karpenter_pods_provisioning_scheduling_undecided_time_seconds"); err != nil {
		t.Error(err)
	}
}
