package signals

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// TestExpireAfterReplacesNodes runs pods on a NodePool with expireAfter
// 45s and waits until every original NodeClaim is gone and the pods run
// again, on new nodes.
func TestExpireAfterReplacesNodes(t *testing.T) {
	// expireAfter is long enough for the pods to run first on a loaded
	// machine, short enough not to idle the suite.
	const expireAfter = 45 * time.Second
	const name = "e2e-expiration"
	pool := test.MakeNodePool(name).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		ExpireAfter(karpv1.NewNillableDuration(expireAfter)).
		// Only expiration removes nodes.
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmpty).
		ConsolidateAfter(karpv1.MustParseNillableDuration(karpv1.Never)).
		Obj()
	f, _ := framework.RunPool(t, name, pool)
	cl := f.Client
	framework.Create(t, cl, framework.Deployment(name, name, name, 2, "1"))
	original := framework.WaitRunningClaims(t, cl, name, 2)
	if len(original) == 0 {
		t.Fatal("no NodeClaim under the pods")
	}
	for n := range original {
		nc := framework.PoolNodeClaimsByName(t.Context(), cl, name)[n]
		if got := nc.Spec.ExpireAfter.Duration; got == nil || *got != expireAfter {
			t.Fatalf("NodeClaim %s expireAfter = %s, want %s", n, nc.Spec.ExpireAfter.String(), expireAfter)
		}
	}

	// Expiry is at 45s; draining and relaunching take seconds. The
	// replacements expire in their turn, onto nodes that are new too.
	framework.Eventually(t, 5*time.Minute, func(ctx context.Context) (bool, string) {
		claims := framework.PoolNodeClaimsByName(ctx, cl, name)
		left := 0
		for n := range original {
			if _, ok := claims[n]; ok {
				left++
			}
		}
		running := framework.AvailablePods(ctx, cl, name, nil)
		onNew := 0
		for _, p := range running {
			onOriginal := false
			for n := range original {
				if claims[n].Status.NodeName == p.Spec.NodeName {
					onOriginal = true
				}
			}
			if !onOriginal {
				onNew++
			}
		}
		return left == 0 && onNew == 2, fmt.Sprintf("%d of %d original NodeClaims left, %d of 2 pods running on new nodes", left, len(original), onNew)
	})
}
