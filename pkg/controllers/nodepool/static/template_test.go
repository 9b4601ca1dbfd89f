package static_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestStaticNodeClaimCarriesTheTemplate: a static NodePool's NodeClaims
// carry its template's labels, annotations and taints of both effects
// (the lifecycle controller copies them to the Node, see
// pkg/controllers/nodeclaim/lifecycle
// TestRegistrationSyncsTheNodeAndLiftsTheUnregisteredTaint).
func TestStaticNodeClaimCarriesTheTemplate(t *testing.T) {
	h := newHarness(t)
	taints := []corev1.Taint{
		{Key: "custom-taint", Value: "custom-value", Effect: corev1.TaintEffectNoSchedule},
		{Key: "other-custom-taint", Value: "other-custom-value", Effect: corev1.TaintEffectNoExecute},
	}
	np := h.ReadyNodePool(test.MakeNodePool("static").Replicas(1).
		Labels(map[string]string{"custom-label": "custom-value"}).
		Annotations(map[string]string{"custom-annotation": "custom-value"}).
		Taint(taints[0]).Taint(taints[1]).Obj())
	h.reconcile(np.Name)
	claims := h.nodeClaims(np.Name)
	if len(claims) != 1 {
		t.Fatalf("%d NodeClaims, want 1", len(claims))
	}
	nc := claims[0]
	if nc.Labels["custom-label"] != "custom-value" || nc.Labels[karpv1.NodePoolLabelKey] != np.Name {
		t.Errorf("labels %v, want custom-label=custom-value and the NodePool's", nc.Labels)
	}
	if nc.Annotations["custom-annotation"] != "custom-value" {
		t.Errorf("annotations %v, want custom-annotation=custom-value", nc.Annotations)
	}
	for _, want := range taints {
		if !slices.ContainsFunc(nc.Spec.Taints, func(got corev1.Taint) bool { return got.MatchTaint(&want) && got.Value == want.Value }) {
			t.Errorf("taints %v lack %v", nc.Spec.Taints, want)
		}
	}
}

// TestDeletingStaticNodePoolLaunchesNothing: a static NodePool being
// deleted (held here by a finalizer) does not replace a node it lost; its
// NodeClaims go with it (owner references, which the garbage collector
// follows: e2e test/e2e/disruption TestStaticNodePoolScalesAndDriftsWithinItsBudget).
func TestDeletingStaticNodePoolLaunchesNothing(t *testing.T) {
	h := newHarness(t)
	const hold = "test.karp.sh/hold"
	pool := test.MakeNodePool("static").Replicas(3).Obj()
	pool.Finalizers = []string{hold}
	np := h.ReadyNodePool(pool)
	t.Cleanup(func() {
		got := &karpv1.NodePool{}
		if h.Client.Get(h.Ctx, client.ObjectKeyFromObject(np), got) == nil && controllerutil.RemoveFinalizer(got, hold) {
			_ = h.Client.Update(h.Ctx, got)
		}
	})
	h.reconcile(np.Name)
	claims := h.nodeClaims(np.Name)
	if len(claims) != 3 {
		t.Fatalf("%d NodeClaims, want 3", len(claims))
	}
	if err := h.Client.Delete(h.Ctx, np); err != nil {
		t.Fatal(err)
	}
	// One node goes meanwhile.
	if err := h.Client.Delete(h.Ctx, &claims[0]); err != nil {
		t.Fatal(err)
	}
	h.Eventually("the deleted NodeClaim leaving in state", func() bool {
		for _, sn := range h.Cluster.Nodes() {
			if sn.NodeClaim != nil && sn.NodeClaim.Name == claims[0].Name {
				return !sn.NodeClaim.DeletionTimestamp.IsZero()
			}
		}
		return false
	})
	h.reconcile(np.Name)
	if n := len(h.nodeClaims(np.Name)); n != 2 {
		t.Errorf("%d NodeClaims once the NodePool is being deleted, want 2 (no replacement)", n)
	}
}
