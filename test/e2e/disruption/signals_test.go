package disruption

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// Helpers shared by the disruption-signal tests (drift, expiration,
// interruption, DaemonSet replacement, do-not-disrupt); the pool set-up,
// the controller and the samplers come from the e2e framework.

// sigNodeClaims lists the pool's NodeClaims by name.
func sigNodeClaims(ctx context.Context, cl client.Client, pool string) map[string]karpv1.NodeClaim {
	var list karpv1.NodeClaimList
	out := map[string]karpv1.NodeClaim{}
	if err := cl.List(ctx, &list, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}); err != nil {
		return out
	}
	for _, nc := range list.Items {
		out[nc.Name] = nc
	}
	return out
}

// sigWaitRunning waits until replicas pods of the namespace run and
// returns the names of the NodeClaims under them.
func sigWaitRunning(t *testing.T, cl client.Client, namespace string, replicas int) map[string]bool {
	t.Helper()
	framework.Eventually(t, 3*time.Minute, func(ctx context.Context) (bool, string) {
		n := len(framework.AvailablePods(ctx, cl, namespace, nil))
		return n == replicas, fmt.Sprintf("%d of %d pods running", n, replicas)
	})
	nodes := map[string]bool{}
	for _, p := range framework.AvailablePods(t.Context(), cl, namespace, nil) {
		nodes[p.Spec.NodeName] = true
	}
	claims := map[string]bool{}
	for name, nc := range sigNodeClaims(t.Context(), cl, namespace) {
		if nodes[nc.Status.NodeName] {
			claims[name] = true
		}
	}
	return claims
}
