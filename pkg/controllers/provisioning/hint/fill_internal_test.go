package hint

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func TestFillPodsLeavesTheLargestAlikeGroupUnhinted(t *testing.T) {
	rsPod := func(name, rs, cpu string) *corev1.Pod {
		p := test.MakePod(name).Requests("cpu", cpu).Owner("ReplicaSet", rs, "uid-"+rs).Obj()
		p.UID = types.UID("pod-" + name)
		p.OwnerReferences[0].Controller = ptrTrue()
		return p
	}
	small := []*corev1.Pod{rsPod("s1", "small", "1"), rsPod("s2", "small", "1"), rsPod("s3", "small", "1")}
	large := []*corev1.Pod{rsPod("l1", "large", "4"), rsPod("l2", "large", "4")}
	claims := []*simulation.NodeClaim{
		{Pods: []*corev1.Pod{large[0], small[0], small[1]}},
		{Pods: []*corev1.Pod{large[1], small[2]}},
	}
	got := FillPods(claims)
	if len(got) != 3 || !got[small[0].UID] || !got[small[1].UID] || !got[small[2].UID] {
		t.Errorf("fill = %v, want the three small pods", got)
	}

	// The same controller with different requests (a resized pod) is not
	// alike; pods with pod anti-affinity, hard spread, host ports or
	// claims are never the fill, however many.
	resized := rsPod("s4", "small", "2")
	anti := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}}
		return p
	}
	spread := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}}
		return p
	}
	ports := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: 8080, ContainerPort: 80}}
		return p
	}
	claim := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		return p
	}
	for name, mutate := range map[string]func(*corev1.Pod) *corev1.Pod{"anti-affinity": anti, "hard spread": spread, "host ports": ports, "claims": claim} {
		many := []*corev1.Pod{}
		for _, n := range []string{"a", "b", "c", "d", "e"} {
			many = append(many, mutate(rsPod(name+n, name, "1")))
		}
		got := FillPods([]*simulation.NodeClaim{{Pods: append(many, large...)}})
		for _, p := range many {
			if got[p.UID] {
				t.Errorf("%s: pod %s left unhinted", name, p.Name)
			}
		}
		if len(got) != 2 {
			t.Errorf("%s: fill = %v, want the two large pods", name, got)
		}
	}
	got = FillPods([]*simulation.NodeClaim{{Pods: []*corev1.Pod{small[0], resized, large[0], large[1]}}})
	if len(got) != 2 || !got[large[0].UID] {
		t.Errorf("fill = %v, want the two alike large pods over one small and one resized", got)
	}
	// A bare pod (no controller) is always hinted, and a lone pod is no
	// group.
	bare := test.MakePod("bare").Requests("cpu", "1").Obj()
	if got := FillPods([]*simulation.NodeClaim{{Pods: []*corev1.Pod{bare, large[0]}}}); len(got) != 0 {
		t.Errorf("fill = %v, want none", got)
	}
}

func ptrTrue() *bool { v := true; return &v }

// TestFillPrefersTheSmallerPodsOfEqualGroups: two alike groups of the same
// size; whichever the owners' UIDs sort first, the fill is the group of
// smaller pods (a misplaced fill pod needs a hole its size).
func TestFillPrefersTheSmallerPodsOfEqualGroups(t *testing.T) {
	for _, uids := range [][2]string{{"a-small", "z-large"}, {"z-small", "a-large"}} {
		rsPod := func(name, uid, cpu, memory string) *corev1.Pod {
			p := test.MakePod(name).Requests("cpu", cpu, "memory", memory).Owner("ReplicaSet", uid, uid).Obj()
			p.UID = types.UID("pod-" + name)
			p.OwnerReferences[0].Controller = ptrTrue()
			return p
		}
		var claims []*simulation.NodeClaim
		var small []*corev1.Pod
		for i := range 3 {
			s := rsPod(fmt.Sprintf("s%d", i), uids[0], "900m", "3100Mi")
			l := rsPod(fmt.Sprintf("l%d", i), uids[1], "3500m", "28Gi")
			small = append(small, s)
			claims = append(claims, &simulation.NodeClaim{Pods: []*corev1.Pod{l, s}})
		}
		got := FillPods(claims)
		if len(got) != 3 || !got[small[0].UID] || !got[small[1].UID] || !got[small[2].UID] {
			t.Errorf("owners %v: fill = %v, want the three small pods", uids, got)
		}
	}
}
