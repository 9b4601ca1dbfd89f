package disruption

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// TestDoNotDisruptPodKeepsItsNode applies nginx-do-not-disrupt.yaml next
// to a filler pod on another node, then drifts both nodes (template label
// change) and empties the filler's node. The filler's nodes are replaced
// and then consolidated away; the do-not-disrupt pod's node is never
// tainted or deleted, and its NodeClaim says why.
func TestDoNotDisruptPodKeepsItsNode(t *testing.T) {
	const name = "e2e-donotdisrupt"
	pool := test.MakeNodePool(name).
		Labels(map[string]string{"rollout": "v1"}).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized).
		ConsolidateAfter(karpv1.NewNillableDuration(5 * time.Second)).
		Budgets(karpv1.Budget{Nodes: "100%"}).
		Obj()
	f, _ := framework.RunPool(t, name, pool, framework.FastDisruptionArgs...)
	cl := f.Client
	ctx := t.Context()

	// 1. The do-not-disrupt pod, exactly as users apply it.
	framework.ApplyManifest(t, cl, fixtures.Example(t, "nginx-do-not-disrupt.yaml"), name, nil)
	protected := framework.WaitRunningClaims(t, cl, name, 1)
	if len(protected) != 1 {
		t.Fatalf("nginx-single runs under %d NodeClaims, want 1", len(protected))
	}
	var protectedName string
	for n := range protected {
		protectedName = n
	}
	protectedClaim := framework.PoolNodeClaimsByName(ctx, cl, name)[protectedName]

	// 2. A filler pod that may not share the protected pod's node.
	filler := framework.Deployment("filler", name, name, 1, "500m")
	filler.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx-single"}}}},
	}}
	framework.Create(t, cl, filler)
	framework.Eventually(t, 3*time.Minute, func(ctx context.Context) (bool, string) {
		n := len(framework.AvailablePods(ctx, cl, name, nil))
		return n == 2, fmt.Sprintf("%d of 2 pods running", n)
	})
	s := framework.WatchDisrupting(t, f, name, protected)

	// 3. Drift: every node of the pool no longer matches its template.
	current := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	framework.Mutate(t, cl, current, func() { current.Spec.Template.ObjectMeta.Labels["rollout"] = "v2" })
	framework.Eventually(t, 4*time.Minute, func(ctx context.Context) (bool, string) {
		fillerNode := sigPodNodeOf(ctx, cl, name, "filler")
		relabelled := false
		for _, nc := range framework.PoolNodeClaimsByName(ctx, cl, name) {
			if nc.Status.NodeName == fillerNode && fillerNode != "" && nc.Labels["rollout"] == "v2" {
				relabelled = true
			}
		}
		protectedNow := framework.PoolNodeClaimsByName(ctx, cl, name)[protectedName]
		drifted := protectedNow.StatusConditions().IsTrue(karpv1.ConditionTypeDrifted)
		return relabelled && drifted, fmt.Sprintf("filler on a replaced node %v, protected node drifted %v", relabelled, drifted)
	})

	// 4. Consolidation: the filler's node becomes empty and goes.
	scaled := filler.DeepCopy()
	framework.Mutate(t, cl, scaled, func() { scaled.Spec.Replicas = ptr.To[int32](0) })
	framework.Eventually(t, 3*time.Minute, func(ctx context.Context) (bool, string) {
		claims := framework.PoolNodeClaimsByName(ctx, cl, name)
		protectedNow := claims[protectedName]
		blocked := protectedNow.StatusConditions().Get(disruption.ConditionTypeDisruptionBlocked)
		why := ""
		if blocked != nil {
			why = blocked.Message
		}
		return len(claims) == 1 && strings.Contains(why, karpv1.DoNotDisruptAnnotationKey),
			fmt.Sprintf("%d NodeClaims left (want only the protected one), why-not %q", len(claims), why)
	})

	peak, _ := s.Stop()
	if peak != 0 {
		t.Errorf("the do-not-disrupt pod's node was tainted or deleted")
	}
	got := framework.PoolNodeClaimsByName(ctx, cl, name)[protectedName]
	if got.UID != protectedClaim.UID || got.DeletionTimestamp != nil {
		t.Errorf("the protected NodeClaim was replaced or is deleting")
	}
}

// sigPodNodeOf returns the node of a running pod of the app.
func sigPodNodeOf(ctx context.Context, cl client.Client, namespace, app string) string {
	for _, p := range framework.AvailablePods(ctx, cl, namespace, nil) {
		if p.Labels["app"] == app {
			return p.Spec.NodeName
		}
	}
	return ""
}
