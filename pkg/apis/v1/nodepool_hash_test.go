package v1_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

var (
	taintA = corev1.Taint{Key: "a", Value: "1", Effect: corev1.TaintEffectNoSchedule}
	taintB = corev1.Taint{Key: "b", Effect: corev1.TaintEffectNoExecute}
)

func hashedPool() *test.NodePoolWrapper {
	return test.MakeNodePool("p").Labels(map[string]string{"team": "a", "tier": "web"}).Taint(taintA).Taint(taintB)
}

func TestTemplateHashIgnores(t *testing.T) {
	want := hashedPool().Obj().Hash()
	for name, pool := range map[string]*karpv1.NodePool{
		"the same template":      hashedPool().Obj(),
		"requirements":           hashedPool().Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64").Obj(),
		"taint order":            test.MakeNodePool("p").Labels(map[string]string{"tier": "web", "team": "a"}).Taint(taintB).Taint(taintA).Obj(),
		"limits":                 hashedPool().Limits(test.ResourceList("cpu", "10")).Obj(),
		"weight":                 hashedPool().Weight(50).Obj(),
		"disruption budgets":     hashedPool().Budgets(karpv1.Budget{Nodes: "1"}).Obj(),
		"labels rewritten equal": withLabels(hashedPool().Obj(), map[string]string{"team": "a", "tier": "web"}),
	} {
		t.Run(name, func(t *testing.T) {
			if got := pool.Hash(); got != want {
				t.Errorf("hash = %s, want %s", got, want)
			}
		})
	}
}

func withLabels(p *karpv1.NodePool, labels map[string]string) *karpv1.NodePool {
	p.Spec.Template.ObjectMeta.Labels = labels
	return p
}

func withEmptyAnnotations(p *karpv1.NodePool) *karpv1.NodePool {
	p.Spec.Template.ObjectMeta.Annotations = map[string]string{}
	return p
}

func TestTemplateHashChangesWith(t *testing.T) {
	was := hashedPool().Obj().Hash()
	for name, pool := range map[string]*karpv1.NodePool{
		"a label":                withLabels(hashedPool().Obj(), map[string]string{"team": "b", "tier": "web"}),
		"an annotation":          hashedPool().Annotations(map[string]string{"example.com/x": "y"}).Obj(),
		"a taint":                hashedPool().Taint(corev1.Taint{Key: "c", Effect: corev1.TaintEffectNoSchedule}).Obj(),
		"a startup taint":        hashedPool().StartupTaint(corev1.Taint{Key: "c", Effect: corev1.TaintEffectNoSchedule}).Obj(),
		"the nodeclass":          hashedPool().NodeClassRef(&karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "other"}).Obj(),
		"expireAfter":            hashedPool().ExpireAfter(karpv1.NewNillableDuration(24 * time.Hour)).Obj(),
		"expireAfter Never":      hashedPool().ExpireAfter(karpv1.NillableDuration{}).Obj(),
		"terminationGracePeriod": hashedPool().TerminationGracePeriod(time.Hour).Obj(),
		// As upstream's hash: an empty map is not a missing one, and a taint
		// listed twice is not the taint listed once (slices hash as XOR sets).
		"empty vs missing annotations": withEmptyAnnotations(hashedPool().Obj()),
		"a duplicate taint":            hashedPool().Taint(taintA).Obj(),
	} {
		t.Run(name, func(t *testing.T) {
			if got := pool.Hash(); got == was {
				t.Errorf("hash unchanged (%s)", got)
			}
		})
	}
}
