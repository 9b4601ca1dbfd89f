package v1_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// minimalNodePool is what a user writes: a nodeClassRef and no
// requirements, no disruption block, no expireAfter.
func minimalNodePool(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "karpenter.sh/v1",
		"kind":       "NodePool",
		"metadata":   map[string]interface{}{"name": name},
		"spec": map[string]interface{}{
			"template": map[string]interface{}{
				"spec": map[string]interface{}{
					"requirements": []interface{}{},
					"nodeClassRef": map[string]interface{}{"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"},
				},
			},
		},
	}}
	return u
}

func TestNodePoolDefaults(t *testing.T) {
	ctx := t.Context()
	u := minimalNodePool("defaults")
	if err := kubeClient.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kubeClient.Delete(context.WithoutCancel(t.Context()), u) })

	got := &karpv1.NodePool{}
	if err := kubeClient.Get(ctx, client.ObjectKey{Name: "defaults"}, got); err != nil {
		t.Fatal(err)
	}
	want := karpv1.Disruption{
		ConsolidateAfter:    karpv1.NewNillableDuration(0),
		ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized,
		Budgets:             []karpv1.Budget{{Nodes: "10%"}},
	}
	if diff := cmp.Diff(want, got.Spec.Disruption); diff != "" {
		t.Errorf("defaulted disruption (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(karpv1.NewNillableDuration(720*time.Hour), got.Spec.Template.Spec.ExpireAfter); diff != "" {
		t.Errorf("defaulted expireAfter (-want,+got):\n%s", diff)
	}
	// The stored spelling is the one users wrote in upstream's docs.
	raw := &unstructured.Unstructured{}
	raw.SetGroupVersionKind(karpv1.SchemeGroupVersion.WithKind("NodePool"))
	if err := kubeClient.Get(ctx, client.ObjectKey{Name: "defaults"}, raw); err != nil {
		t.Fatal(err)
	}
	expire, _, _ := unstructured.NestedString(raw.Object, "spec", "template", "spec", "expireAfter")
	consolidate, _, _ := unstructured.NestedString(raw.Object, "spec", "disruption", "consolidateAfter")
	if expire != "720h" || consolidate != "0s" {
		t.Errorf("stored expireAfter=%q consolidateAfter=%q, want 720h and 0s", expire, consolidate)
	}
}

// A budget written without nodes gets 10%; a disruption block without
// budgets gets the default budget list.
func TestNodePoolDefaultsInsideDisruption(t *testing.T) {
	ctx := t.Context()
	u := minimalNodePool("defaults-budget")
	if err := unstructured.SetNestedField(u.Object, map[string]interface{}{
		"consolidationPolicy": "WhenEmpty",
		"budgets":             []interface{}{map[string]interface{}{"reasons": []interface{}{"Empty"}}},
	}, "spec", "disruption"); err != nil {
		t.Fatal(err)
	}
	if err := kubeClient.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kubeClient.Delete(context.WithoutCancel(t.Context()), u) })
	got := &karpv1.NodePool{}
	if err := kubeClient.Get(ctx, client.ObjectKey{Name: "defaults-budget"}, got); err != nil {
		t.Fatal(err)
	}
	want := karpv1.Disruption{
		ConsolidateAfter:    karpv1.NewNillableDuration(0),
		ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmpty,
		Budgets:             []karpv1.Budget{{Nodes: "10%", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonEmpty}}},
	}
	if diff := cmp.Diff(want, got.Spec.Disruption); diff != "" {
		t.Errorf("defaulted disruption (-want,+got):\n%s", diff)
	}
}

func TestNodeClaimExpireAfterDefault(t *testing.T) {
	ctx := t.Context()
	u := toUnstructured(t, test.MakeNodeClaim("defaults").Obj())
	unstructured.RemoveNestedField(u.Object, "spec", "expireAfter")
	if err := kubeClient.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kubeClient.Delete(context.WithoutCancel(t.Context()), u) })
	got := &karpv1.NodeClaim{}
	if err := kubeClient.Get(ctx, client.ObjectKey{Name: "defaults"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.ExpireAfter.String() != (720 * time.Hour).String() {
		t.Errorf("expireAfter = %s, want 720h", got.Spec.ExpireAfter)
	}
}

func TestNodePoolNodeClassRefGroupAndKindAreImmutable(t *testing.T) {
	ctx := t.Context()
	nodePool := test.MakeNodePool("noderef").Obj()
	if err := kubeClient.Create(ctx, nodePool); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kubeClient.Delete(context.WithoutCancel(t.Context()), nodePool) })

	tests := map[string]struct {
		mutate  func(ref *karpv1.NodeClassReference)
		wantErr string
	}{
		"group":         {mutate: func(ref *karpv1.NodeClassReference) { ref.Group = "karpenter.k8s.aws" }, wantErr: "nodeClassRef.group is immutable"},
		"kind":          {mutate: func(ref *karpv1.NodeClassReference) { ref.Kind = "EC2NodeClass" }, wantErr: "nodeClassRef.kind is immutable"},
		"name may move": {mutate: func(ref *karpv1.NodeClassReference) { ref.Name = "other" }},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			current := &karpv1.NodePool{}
			if err := kubeClient.Get(ctx, client.ObjectKeyFromObject(nodePool), current); err != nil {
				t.Fatal(err)
			}
			tc.mutate(current.Spec.Template.Spec.NodeClassRef)
			err := kubeClient.Update(ctx, current)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("update rejected: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "spec.template.spec.nodeClassRef") {
				t.Fatalf("update error = %v, want %q at spec.template.spec.nodeClassRef", err, tc.wantErr)
			}
		})
	}
}

func TestNodePoolCannotSwitchBetweenStaticAndDynamic(t *testing.T) {
	ctx := t.Context()
	nodePool := test.MakeNodePool("static").Obj()
	if err := kubeClient.Create(ctx, nodePool); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kubeClient.Delete(context.WithoutCancel(t.Context()), nodePool) })
	nodePool.Spec.Replicas = new(int64)
	err := kubeClient.Update(ctx, nodePool)
	if err == nil || !strings.Contains(err.Error(), "between static (replicas set) and dynamic") {
		t.Fatalf("update error = %v, want the static/dynamic transition rejected", err)
	}
}
