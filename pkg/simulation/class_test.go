package simulation

import (
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
