package hash_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/nodeclass/hash"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func nodeClass(name string, annotations map[string]string) *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       "KarpenterNodeRole-test",
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "test"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "test"}}},
		},
	}
	nc.SetGroupVersionKind(awsv1.SchemeGroupVersion.WithKind(awsv1.Kind))
	return nc
}

func reconcileNodeClass(t *testing.T, name string) *awsv1.EC2NodeClass {
	t.Helper()
	c := hash.NewController(h.Env.Client)
	if _, err := reconcile.AsReconciler(h.Env.Client, c).Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
		t.Fatal(err)
	}
	got := &awsv1.EC2NodeClass{}
	if err := h.Env.Client.Get(t.Context(), types.NamespacedName{Name: name}, got); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestTheNodeClassCarriesItsHash(t *testing.T) {
	h.Reset(t)
	nc := nodeClass("hashed", nil)
	h.Create(t, nc)
	ctx := context.WithoutCancel(t.Context())
	t.Cleanup(func() { _ = h.Env.Client.Delete(ctx, nc) })

	got := reconcileNodeClass(t, nc.Name)
	if got.Annotations[awsv1.AnnotationEC2NodeClassHash] != got.Hash() || got.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] != awsv1.EC2NodeClassHashVersion {
		t.Fatalf("annotations %v, want hash %s version %s", got.Annotations, got.Hash(), awsv1.EC2NodeClassHashVersion)
	}
	first := got.Hash()

	got.Spec.Tags = map[string]string{"team": "a"}
	if err := h.Env.Client.Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	got = reconcileNodeClass(t, nc.Name)
	if h := got.Annotations[awsv1.AnnotationEC2NodeClassHash]; h == first || h != got.Hash() {
		t.Errorf("after a tag change: hash %s (was %s), want the new %s", h, first, got.Hash())
	}
}

func TestNodeClaimsOfAnOlderHashVersionAreMigrated(t *testing.T) {
	h.Reset(t)
	karpenterVersion := map[string]string{awsv1.AnnotationEC2NodeClassHashVersion: "v6", awsv1.AnnotationEC2NodeClassHash: "111"}
	nc := nodeClass("migrated", karpenterVersion)
	other := nodeClass("other", nil)
	h.Create(t, nc, other)
	ctx := context.WithoutCancel(t.Context())
	t.Cleanup(func() {
		_ = h.Env.Client.Delete(ctx, nc)
		_ = h.Env.Client.Delete(ctx, other)
	})
	claim := func(name, nodeClass string, annotations map[string]string) *karpv1.NodeClaim {
		return test.MakeNodeClaim(name).NodePool("default").NodeClassRef(awsv1.NodeClassReference(nodeClass)).Annotations(annotations).Obj()
	}
	current := map[string]string{awsv1.AnnotationEC2NodeClassHashVersion: awsv1.EC2NodeClassHashVersion, awsv1.AnnotationEC2NodeClassHash: "222"}
	h.Create(t,
		claim("live", nc.Name, karpenterVersion),
		claim("drifted", nc.Name, karpenterVersion),
		claim("current", nc.Name, current),
		claim("elsewhere", other.Name, karpenterVersion),
	)
	drifted := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "drifted"}}
	h.Get(t, drifted)
	drifted.StatusConditions().SetTrue(karpv1.ConditionTypeDrifted)
	h.UpdateStatus(t, drifted)

	got := reconcileNodeClass(t, nc.Name)

	want := map[string]map[string]string{
		"live":      {awsv1.AnnotationEC2NodeClassHashVersion: awsv1.EC2NodeClassHashVersion, awsv1.AnnotationEC2NodeClassHash: got.Hash()},
		"drifted":   {awsv1.AnnotationEC2NodeClassHashVersion: awsv1.EC2NodeClassHashVersion, awsv1.AnnotationEC2NodeClassHash: "111"},
		"current":   current,
		"elsewhere": karpenterVersion,
	}
	for name, annotations := range want {
		nodeClaim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
		h.Get(t, nodeClaim)
		for k, v := range annotations {
			if nodeClaim.Annotations[k] != v {
				t.Errorf("nodeclaim %s: %s = %q, want %q", name, k, nodeClaim.Annotations[k], v)
			}
		}
	}
	if got.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] != awsv1.EC2NodeClassHashVersion {
		t.Errorf("nodeclass hash version %q, want %q", got.Annotations[awsv1.AnnotationEC2NodeClassHashVersion], awsv1.EC2NodeClassHashVersion)
	}
}
