package disruption

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// TestDrainingANodeClaimKeepsNginxAvailable deletes the NodeClaim under one
// of nginx-demo's two replicas (PDB minAvailable 50%) and samples the
// cluster every 200 ms: at least one replica stays available throughout,
// the pods leave only through the Eviction API (which enforces the PDB),
// and the node, its NodeClaim and its instance go once it is drained.
func TestDrainingANodeClaimKeepsNginxAvailable(t *testing.T) {
	const name = "e2e-termination"
	nodePool := test.MakeNodePool(name).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		// Only this test's drain removes nodes.
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmpty).
		ConsolidateAfter(karpv1.MustParseNillableDuration(karpv1.Never)).
		Obj()
	f, _ := framework.RunPool(t, name, nodePool)
	ctx := t.Context()
	cl := f.Client
	nginx := map[string]string{"app": "nginx-demo"}

	// nginx-demo exactly as users apply it, in this test's namespace.
	framework.ApplyManifest(t, cl, fixtures.Example(t, "nginx-demo.yaml"), name, nil)
	var pods []corev1.Pod
	framework.Eventually(t, 3*time.Minute, func(ctx context.Context) (bool, string) {
		pods = framework.AvailablePods(ctx, cl, name, nginx)
		return len(pods) == 2, fmt.Sprintf("%d of 2 nginx replicas available; %s",
			len(pods), framework.Describe(ctx, cl, name))
	})

	// The NodeClaims under both replicas go at once: the PDB lets one
	// replica be evicted at a time, the other waits for its replacement.
	drained := pods
	var nodeClaims []*karpv1.NodeClaim
	for _, p := range pods {
		nc := framework.NodeClaimOfNode(t, cl, p.Spec.NodeName)
		if !slices.ContainsFunc(nodeClaims, func(o *karpv1.NodeClaim) bool { return o.Name == nc.Name }) {
			nodeClaims = append(nodeClaims, nc)
		}
		t.Logf("replica %s runs on node %s (nodeclaim %s)", p.Name, p.Spec.NodeName, nc.Name)
	}

	w := framework.SampleAvailable(t, cl, name, nginx)
	for _, nc := range nodeClaims {
		if err := cl.Delete(ctx, nc); err != nil {
			t.Fatalf("deleting nodeclaim: %v", err)
		}
	}
	framework.Eventually(t, 4*time.Minute, func(ctx context.Context) (bool, string) {
		left := 0
		for _, nc := range nodeClaims {
			if !apierrors.IsNotFound(cl.Get(ctx, client.ObjectKeyFromObject(nc), &karpv1.NodeClaim{})) {
				left++
			}
			if !apierrors.IsNotFound(cl.Get(ctx, types.NamespacedName{Name: nc.Status.NodeName}, &corev1.Node{})) {
				left++
			}
		}
		avail := len(framework.AvailablePods(ctx, cl, name, nginx))
		return left == 0 && avail == 2, fmt.Sprintf("%d nodeclaims and nodes left, %d of 2 replicas available; %s",
			left, avail, framework.Describe(ctx, cl, name))
	})
	samples, minAvailable := w.Stop()

	t.Logf("%d samples, at least %d replica(s) available in each", samples, minAvailable)
	if samples < 2 {
		t.Errorf("only %d samples taken", samples)
	}
	if minAvailable < 1 {
		t.Errorf("a sample saw %d available nginx replicas; the PDB requires 1", minAvailable)
	}
	for _, p := range drained {
		reasons := framework.EventReasons(t, cl, name, "Pod", p.Name)
		if !slices.Contains(reasons, "Evicted") {
			t.Errorf("pod %s left without an eviction (events %v)", p.Name, reasons)
		}
		if slices.Contains(reasons, "Disrupted") {
			t.Errorf("pod %s was force-deleted (events %v)", p.Name, reasons)
		}
		t.Logf("pod %s events: %v", p.Name, reasons)
	}
}
