package hash_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodepool/hash"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

// base is NodePool "p" with template labels and taints.
func base() *test.NodePoolWrapper {
	return test.MakeNodePool("p").Labels(map[string]string{"team": "a", "tier": "web"}).
		Taint(corev1.Taint{Key: "a", Value: "1", Effect: corev1.TaintEffectNoSchedule})
}

func reconcilePool(t *testing.T, c *hash.Controller, name string) *karpv1.NodePool {
	t.Helper()
	if _, err := operatortest.Reconcile(t, h, c, name); err != nil {
		t.Fatal(err)
	}
	got := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	h.Get(t, got)
	return got
}

func TestNodePoolIsStampedAndRestampedOnChange(t *testing.T) {
	h.Reset(t)
	c := hash.NewController(h.Client)
	h.Create(t, base().Obj())

	got := reconcilePool(t, c, "p")
	first := got.Annotations[karpv1.NodePoolHashAnnotationKey]
	if first != got.Hash() {
		t.Errorf("hash annotation = %q, want %q", first, got.Hash())
	}
	if v := got.Annotations[karpv1.NodePoolHashVersionAnnotationKey]; v != karpv1.NodePoolHashVersion {
		t.Errorf("hash version = %q, want %q", v, karpv1.NodePoolHashVersion)
	}

	// Requirements do not move the hash; labels do.
	got.Spec.Template.Spec.Requirements = append(got.Spec.Template.Spec.Requirements,
		karpv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}})
	if err := h.Env.Client.Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	if got = reconcilePool(t, c, "p"); got.Annotations[karpv1.NodePoolHashAnnotationKey] != first {
		t.Errorf("hash moved on a requirements change")
	}
	got.Spec.Template.ObjectMeta.Labels["team"] = "b"
	if err := h.Env.Client.Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	if got = reconcilePool(t, c, "p"); got.Annotations[karpv1.NodePoolHashAnnotationKey] == first {
		t.Errorf("hash did not move on a label change")
	}
}

func TestHashVersionChangeRestampsNodeClaims(t *testing.T) {
	h.Reset(t)
	c := hash.NewController(h.Client)
	// The pool was stamped by an older hash algorithm.
	pool := base().Obj()
	pool.Annotations = map[string]string{
		karpv1.NodePoolHashAnnotationKey:        "12345",
		karpv1.NodePoolHashVersionAnnotationKey: "v1",
	}
	h.Create(t, pool)
	old := test.MakeNodeClaim("old").NodePool("p").Annotations(map[string]string{
		karpv1.NodePoolHashAnnotationKey:        "12345",
		karpv1.NodePoolHashVersionAnnotationKey: "v1",
	}).Obj()
	other := test.MakeNodeClaim("other-pool").NodePool("q").Annotations(map[string]string{
		karpv1.NodePoolHashAnnotationKey:        "999",
		karpv1.NodePoolHashVersionAnnotationKey: "v1",
	}).Obj()
	drifted := test.MakeNodeClaim("drifted").NodePool("p").Annotations(map[string]string{
		karpv1.NodePoolHashAnnotationKey:        "12345",
		karpv1.NodePoolHashVersionAnnotationKey: "v1",
	}).Obj()
	h.Create(t, old, other, drifted)
	drifted.StatusConditions().SetTrueWithReason(karpv1.ConditionTypeDrifted, "NodePoolDrifted", "")
	h.UpdateStatus(t, drifted)

	got := reconcilePool(t, c, "p")
	want := got.Annotations[karpv1.NodePoolHashAnnotationKey]
	if want == "12345" {
		t.Fatal("pool hash not recomputed")
	}
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "old"}}
	h.Get(t, nc)
	if nc.Annotations[karpv1.NodePoolHashAnnotationKey] != want || nc.Annotations[karpv1.NodePoolHashVersionAnnotationKey] != karpv1.NodePoolHashVersion {
		t.Errorf("nodeclaim annotations = %v, want re-stamped with %s/%s", nc.Annotations, want, karpv1.NodePoolHashVersion)
	}
	// A claim already drifted stays drifted: it gets the new version but
	// keeps its old hash, which no longer matches.
	stillDrifted := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "drifted"}}
	h.Get(t, stillDrifted)
	if stillDrifted.Annotations[karpv1.NodePoolHashAnnotationKey] != "12345" || stillDrifted.Annotations[karpv1.NodePoolHashVersionAnnotationKey] != karpv1.NodePoolHashVersion {
		t.Errorf("drifted nodeclaim annotations = %v, want hash 12345 at version %s", stillDrifted.Annotations, karpv1.NodePoolHashVersion)
	}
	untouched := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "other-pool"}}
	h.Get(t, untouched)
	if untouched.Annotations[karpv1.NodePoolHashAnnotationKey] != "999" {
		t.Errorf("another pool's nodeclaim was re-stamped: %v", untouched.Annotations)
	}
}

// TestUpstreamStampedPoolIsLeftAlone: a NodePool and NodeClaim stamped by
// upstream Karpenter (hash of testdata case "labels", version v3) are not
// re-stamped: karp computes the same hash.
func TestUpstreamStampedPoolIsLeftAlone(t *testing.T) {
	h.Reset(t)
	c := hash.NewController(h.Client)
	const upstreamHash = "5187040843980608212"
	stamp := map[string]string{
		karpv1.NodePoolHashAnnotationKey:        upstreamHash,
		karpv1.NodePoolHashVersionAnnotationKey: "v3",
	}
	pool := test.MakeNodePool("p").Labels(map[string]string{"team": "a", "tier": "web"}).Obj()
	pool.Spec.Template.Spec.ExpireAfter = karpv1.NewNillableDuration(720 * time.Hour)
	pool.Annotations = stamp
	h.Create(t, pool)
	before := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	h.Get(t, before)

	got := reconcilePool(t, c, "p")
	if got.ResourceVersion != before.ResourceVersion {
		t.Errorf("upstream-stamped pool was patched: annotations %v", got.Annotations)
	}
	if got.Annotations[karpv1.NodePoolHashAnnotationKey] != upstreamHash {
		t.Errorf("hash = %s, want upstream's %s", got.Annotations[karpv1.NodePoolHashAnnotationKey], upstreamHash)
	}
}
