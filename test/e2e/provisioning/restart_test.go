package provisioning_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// TestControllerKilledDuringScaleOut SIGKILLs the controller as soon as
// the first NodeClaims of a scale-out exist, starts a new one, and checks
// the scale-out finishes with no duplicate node and no leaked instance.
func TestControllerKilledDuringScaleOut(t *testing.T) {
	ensureController(t)
	ensureNodeClass(t)
	const replicas = 24
	// Instances take 5s to register, so the kill lands while launches are
	// in flight: NodeClaims exist, their Nodes do not yet.
	nodeClass := test.MakeKWOKNodeClass("e2e-slow").NodeRegistrationDelay(5 * time.Second).Obj()
	create(t, nodeClass)
	// c5.xlarge only: three 1-cpu pods per node (3.92 cpu allocatable).
	nodePool := pool("e2e-restart").NodeClassRef(kwokv1alpha1.NodeClassReference("e2e-slow")).
		Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.xlarge").
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).Obj()
	create(t, nodePool, deployment("e2e-restart", replicas, "1", "1Gi", onPool("e2e-restart")))

	// 1. Kill mid scale-out: NodeClaims exist, not every pod runs yet.
	framework.Eventually(t, scaleTimeout, func(context.Context) (bool, string) {
		n := len(nodeClaimsOf(t, "e2e-restart"))
		return n > 0, fmt.Sprintf("%d NodeClaims", n)
	})
	killController(t)
	running := 0
	for _, pod := range podsOf(t, "default", "e2e-restart") {
		if framework.PodRunning(&pod) {
			running++
		}
	}
	t.Logf("killed the controller with %d NodeClaims, %d Nodes and %d of %d pods running",
		len(nodeClaimsOf(t, "e2e-restart")), len(nodesOf(t, "e2e-restart")), running, replicas)

	// 2. A new controller finishes the job.
	ensureController(t)
	waitRunning(t, "default", "e2e-restart", replicas)

	// 3. Exactly the nodes the pods need, each with one NodeClaim.
	nodes := nodesOf(t, "e2e-restart")
	perNode := nodes[0].Status.Allocatable.Cpu().MilliValue() / 1000
	want := (replicas + int(perNode) - 1) / int(perNode)
	if len(nodes) != want {
		t.Errorf("%d nodes for %d one-cpu pods at %d per node, want %d", len(nodes), replicas, perNode, want)
	}
	if claims := nodeClaimsOf(t, "e2e-restart"); len(claims) != len(nodes) {
		t.Errorf("%d NodeClaims for %d nodes", len(claims), len(nodes))
	}
	expectOneToOne(t)
}
