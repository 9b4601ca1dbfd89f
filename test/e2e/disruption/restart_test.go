package disruption

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// TestRestartMidConsolidationLeavesNothingBehind shrinks a pod so its node
// becomes worth replacing, kills karp (SIGKILL) as soon as the
// replacement NodeClaim exists (the candidate tainted, the replacement not
// yet initialized), and starts it again. (A registration delay on the
// NodeClass would make the kwok instance die with the process: the kwok
// provider creates delayed Nodes from memory.) Eventually the pool holds one node, no node is left tainted
// without being deleted, no replacement is orphaned, and no pod was
// evicted twice.
func TestRestartMidConsolidationLeavesNothingBehind(t *testing.T) {
	const name = "e2e-restart"
	pool := test.MakeNodePool(name).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized).
		ConsolidateAfter(karpv1.MustParseNillableDuration("5s")).
		Budgets(karpv1.Budget{Nodes: "100%"}).Obj()
	f := framework.Current(t)
	cl := f.Client
	framework.Create(t, cl, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	framework.Create(t, cl, test.MakeKWOKNodeClass(name).Obj())
	pool.Spec.Template.Spec.NodeClassRef.Name = name
	framework.Create(t, cl, pool)
	first := framework.StartKarp(t, f, framework.FastDisruptionArgs...)

	deploy := framework.Deployment(name, name, name, 1, "6")
	framework.Create(t, cl, deploy)
	app := map[string]string{"app": name}
	framework.Eventually(t, 4*time.Minute, func(ctx context.Context) (bool, string) {
		n := len(framework.AvailablePods(ctx, cl, name, app))
		return n == 1, fmt.Sprintf("%d of 1 pods available", n)
	})
	// Shrink the pod: the rolling update puts the small pod on the same
	// node, which is now far too big.
	current := deploy.DeepCopy()
	framework.Mutate(t, cl, current, func() {
		current.Spec.Template.Spec.Containers[0].Resources.Requests = test.ResourceList("cpu", "500m", "memory", "256Mi")
	})
	framework.Eventually(t, 4*time.Minute, func(ctx context.Context) (bool, string) {
		claims := framework.PoolNodeClaims(ctx, cl, name)
		return len(claims) >= 2, fmt.Sprintf("%d nodeclaims: waiting for a replacement", len(claims))
	})
	first.Stop(syscall.SIGKILL)
	t.Log("karp killed while its replacement launches")
	framework.StartKarp(t, f, framework.FastDisruptionArgs...)
	t.Cleanup(func() { framework.DeletePool(cl, name) })

	framework.Eventually(t, 5*time.Minute, func(ctx context.Context) (bool, string) {
		claims := framework.PoolNodeClaims(ctx, cl, name)
		stale := 0
		for _, nc := range claims {
			node := &corev1.Node{}
			if nc.DeletionTimestamp == nil && nc.Status.NodeName != "" &&
				cl.Get(ctx, types.NamespacedName{Name: nc.Status.NodeName}, node) == nil && framework.HasDisruptedTaint(node) {
				stale++
			}
		}
		avail := len(framework.AvailablePods(ctx, cl, name, app))
		return len(claims) == 1 && stale == 0 && avail == 1,
			fmt.Sprintf("%d nodeclaims (want 1), %d tainted but not deleting, %d of 1 pods available", len(claims), stale, avail)
	})
	var events eventsv1.EventList
	if err := cl.List(t.Context(), &events, client.InNamespace(name)); err != nil {
		t.Fatal(err)
	}
	evicted := map[string]int{}
	for _, e := range events.Items {
		if e.Reason == "Evicted" && e.Regarding.Kind == "Pod" {
			evicted[e.Regarding.Name]++
		}
	}
	for pod, n := range evicted {
		if n > 1 {
			framework.Errorf(t, "pod %s was evicted %d times", pod, n)
		}
	}
	t.Logf("evictions per pod: %v", evicted)
}
