package simulation

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestClassesSplitOnEverySchedulingField checks that pods share a class
// exactly when nothing that affects placement differs.
func TestClassesSplitOnEverySchedulingField(t *testing.T) {
	base := func() *test.PodWrapper { return test.MakePod("p").Requests("cpu", "1").Label("app", "web") }
	variants := map[string]*corev1.Pod{
		"namespace":         base().Namespace("other").Obj(),
		"label":             base().Label("tier", "x").Obj(),
		"request":           base().Requests("cpu", "2").Obj(),
		"nodeSelector":      base().NodeSelector(map[string]string{"a": "b"}).Obj(),
		"required affinity": base().NodeAffinityTerm(req("a", corev1.NodeSelectorOpIn, "b")).Obj(),
		"preferred":         base().PreferredNodeAffinity(1, req("a", corev1.NodeSelectorOpIn, "b")).Obj(),
		"toleration":        base().Toleration(corev1.Toleration{Key: "a", Operator: corev1.TolerationOpExists}).Obj(),
		"spread":            base().Spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, web).Obj(),
		"spread skew":       base().Spread(corev1.LabelTopologyZone, 2, corev1.DoNotSchedule, web).Obj(),
		"pod affinity":      base().PodAffinity(corev1.LabelHostname, web).Obj(),
		"anti-affinity":     base().PodAntiAffinity(corev1.LabelHostname, web).Obj(),
		"preferred anti":    base().PreferredPodAntiAffinity(5, corev1.LabelHostname, web).Obj(),
		"host port":         base().HostPort(80).Obj(),
		"init container":    base().InitContainer("i", test.ResourceList("cpu", "3"), false).Obj(),
	}
	pods := []*corev1.Pod{base().Obj(), test.MakePod("twin").Requests("cpu", "1").Label("app", "web").Obj()}
	for _, p := range variants {
		pods = append(pods, p)
	}
	in := Input{Pods: pods, NodePools: []*NodePool{withTypes(test.MakeNodePool("default").Obj())}}
	s := newSolver(&in)
	infos := s.pendingPods()
	if infos[0].class != infos[1].class {
		t.Fatal("identical pods got different classes")
	}
	if want := len(variants) + 1; len(s.classes) != want {
		t.Fatalf("%d classes, want %d (one per variant plus the base)", len(s.classes), want)
	}
}

// TestClassesOfOneShapeShareVariants checks that classes differing only in
// their requests share their first class's variants' requirements,
// constraints and shape-level caches, and that any other difference makes
// a shape of its own.
func TestClassesOfOneShapeShareVariants(t *testing.T) {
	base := func() *test.PodWrapper {
		return test.MakePod("p").Requests("cpu", "1").Label("app", "web").
			PreferredPodAntiAffinity(5, corev1.LabelHostname, web).Spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, web)
	}
	pods := []*corev1.Pod{base().Obj(), base().Requests("cpu", "2").Obj(), base().Label("tier", "x").Obj()}
	in := Input{Pods: pods, NodePools: []*NodePool{withTypes(test.MakeNodePool("default").Obj())}}
	s := newSolver(&in)
	infos := s.pendingPods()
	first, bigger, other := infos[0].class, infos[1].class, infos[2].class
	if first == bigger || bigger.proto != first || first.proto != first || other.proto != other {
		t.Fatalf("shapes: bigger.proto is first %v, other its own %v", bigger.proto == first, other.proto == other)
	}
	if len(first.variants) != 2 || len(bigger.variants) != len(first.variants) {
		t.Fatalf("%d and %d variants, want 2 each (the preference, then relaxed)", len(first.variants), len(bigger.variants))
	}
	for i, v := range bigger.variants {
		fv := first.variants[i]
		if v.class != bigger || v.id == fv.id || v.shared != fv.shared || len(v.constraints) != len(fv.constraints) ||
			&v.constraints[0] != &fv.constraints[0] || len(v.pinKeys) != 1 || v.pinKeys[0] != fv.pinKeys[0] {
			t.Errorf("variant %d of the bigger class does not share the first class's", i)
		}
		if ov := other.variants[i]; ov.shared == fv.shared {
			t.Errorf("variant %d of the class with another label shares the first class's caches", i)
		}
	}
	if len(first.counts) != 2 || !slices.Equal(bigger.counts, first.counts) {
		t.Errorf("the classes are counted by %d and %d groups, want the same 2", len(first.counts), len(bigger.counts))
	}
}
