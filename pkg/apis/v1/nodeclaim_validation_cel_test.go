package v1_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func claim() *test.NodeClaimWrapper { return test.MakeNodeClaim("invalid") }

// invalidNodeClaims are NodeClaims the API server must reject.
func invalidNodeClaims() map[string]invalidCase {
	return map[string]invalidCase{
		"requirement kubernetes.io/hostname":   {obj: claim().Requirement("kubernetes.io/hostname", corev1.NodeSelectorOpIn, "a").Obj(), want: []string{"spec.requirements[0].key", `label "kubernetes.io/hostname" is restricted`}},
		"requirement in karpenter.sh domain":   {obj: claim().Requirement("karpenter.sh/other", corev1.NodeSelectorOpExists).Obj(), want: []string{"spec.requirements[0].key", `label domain "karpenter.sh" is restricted`}},
		"In without values":                    {obj: claim().Requirement("example.com/a", corev1.NodeSelectorOpIn).Obj(), want: []string{"spec.requirements[0].values", "must have a value defined"}},
		"Gte with a word":                      {obj: claim().Requirement("example.com/a", karpv1.NodeSelectorOpGte, "many").Obj(), want: []string{"spec.requirements[0].values", "single non-negative integer"}},
		"minValues above the number of values": {obj: claim().RequirementWithMinValues("example.com/a", corev1.NodeSelectorOpIn, 2, "a").Obj(), want: []string{"spec.requirements[1].minValues", "at least that many values"}},
		"requirements missing":                 {obj: claim().Obj(), mutate: remove("spec", "requirements"), want: []string{"spec.requirements", "Required value"}},
		"taint effect unknown":                 {obj: claim().Taint(corev1.Taint{Key: "a", Effect: "Never"}).Obj(), want: []string{"spec.taints[0].effect", "Unsupported value"}},
		"startup taint key bad format":         {obj: claim().StartupTaint(corev1.Taint{Key: "a/b/c", Effect: corev1.TaintEffectNoSchedule}).Obj(), want: []string{"spec.startupTaints[0].key", "should match"}},
		"nodeClassRef missing":                 {obj: claim().NodeClassRef(nil).Obj(), want: []string{"spec.nodeClassRef", "Required value"}},
		"nodeClassRef empty group":             {obj: claim().NodeClassRef(&karpv1.NodeClassReference{Kind: "KWOKNodeClass", Name: "default"}).Obj(), want: []string{"spec.nodeClassRef.group", "group may not be empty"}},
		"expireAfter in weeks":                 {obj: claim().Obj(), mutate: set("1w", "spec", "expireAfter"), want: []string{"spec.expireAfter", "should match"}},
		"terminationGracePeriod in days":       {obj: claim().Obj(), mutate: set("1d", "spec", "terminationGracePeriod"), want: []string{"spec.terminationGracePeriod", "should match"}},
		"request not a quantity":               {obj: claim().Obj(), mutate: set("two", "spec", "resources", "requests", "cpu"), want: []string{"spec.resources.requests.cpu"}},
		"requirement value too long":           {obj: claim().Requirement("example.com/a", corev1.NodeSelectorOpNotIn, strings.Repeat("x", 64)).Obj(), want: []string{"spec.requirements[0].values[0]", "may not be more than 63"}},
	}
}

func TestNodeClaimValidationRejects(t *testing.T) {
	cases := invalidNodeClaims()
	// minValues needs a preceding requirement so the index in the path is checked.
	mv := cases["minValues above the number of values"]
	mv.obj = claim().Requirement("example.com/b", corev1.NodeSelectorOpExists).
		RequirementWithMinValues("example.com/a", corev1.NodeSelectorOpIn, 2, "a").Obj()
	cases["minValues above the number of values"] = mv
	expectRejected(t, cases)
}

func TestNodeClaimValidationAccepts(t *testing.T) {
	expectAccepted(t, map[string]client.Object{
		// Unlike NodePools, NodeClaims carry their NodePool as a requirement.
		"nodepool requirement": claim().Requirement(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, "default").Obj(),
		"full spec": claim().NodePool("default").
			Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c-1x-amd64-linux", "c-2x-amd64-linux").
			Requirement("karpenter.kwok.sh/instance-cpu", karpv1.NodeSelectorOpGte, "2").
			RequirementWithMinValues("karpenter.kwok.sh/instance-family", corev1.NodeSelectorOpIn, 2, "c", "m").
			Requests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourcePods: resource.MustParse("3")}).
			Taint(karpv1.DisruptedNoScheduleTaint).
			StartupTaint(karpv1.UnregisteredNoExecuteTaint).
			TerminationGracePeriod(time.Hour).
			ExpireAfter(karpv1.NillableDuration{}).Obj(),
	})
}

// A NodeClaim's spec is fixed at creation; its metadata is not.
func TestNodeClaimSpecIsImmutable(t *testing.T) {
	ctx := t.Context()
	nodeClaim := test.MakeNodeClaim("immutable").Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64").Obj()
	if err := kubeClient.Create(ctx, nodeClaim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kubeClient.Delete(context.WithoutCancel(t.Context()), nodeClaim) })

	labeled := nodeClaim.DeepCopy()
	labeled.Labels = map[string]string{"example.com/team": "a"}
	if err := kubeClient.Update(ctx, labeled); err != nil {
		t.Fatalf("updating labels: %v", err)
	}

	mutations := map[string]func(*karpv1.NodeClaim){
		"taint added": func(nc *karpv1.NodeClaim) {
			nc.Spec.Taints = []corev1.Taint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}}
		},
		"requirement changed":  func(nc *karpv1.NodeClaim) { nc.Spec.Requirements[0].Values = []string{"arm64"} },
		"expireAfter changed":  func(nc *karpv1.NodeClaim) { nc.Spec.ExpireAfter = karpv1.NillableDuration{} },
		"nodeClassRef renamed": func(nc *karpv1.NodeClaim) { nc.Spec.NodeClassRef.Name = "other" },
	}
	for name, mutate := range mutations {
		t.Run(name, func(t *testing.T) {
			updated := labeled.DeepCopy()
			mutate(updated)
			err := kubeClient.Update(ctx, updated)
			if err == nil || !strings.Contains(err.Error(), "spec is immutable") {
				t.Fatalf("update error = %v, want spec is immutable", err)
			}
		})
	}
}
