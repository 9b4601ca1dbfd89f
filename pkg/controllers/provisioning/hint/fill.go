package hint

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// Which pods of new NodeClaims need a scheduler hint. A hint costs a pod
// status write, and the scheduler clears it each time it fails to place
// the pod, so a large scale-up spends thousands of writes on hints. Most
// are not needed: pods that are all alike (one controller, the same
// requests) cannot fragment one another. The solver planned room for
// each of them on some node, and once the other pods are hinted (the
// scheduler counts a hinted pod against its node while placing others),
// that room stays theirs; wherever the scheduler puts each alike pod, the
// room on each node still holds as many of them as planned there.
//
// So the largest group of alike pods is left unhinted (the fill; of two
// as large, the one of smaller pods), as long as nothing but resources
// decides where its pods may go: no pod (anti-)affinity, no hard topology
// spread, no host ports and no volumes.
// Every other pod is hinted.

// FillPods returns the UIDs of the pods of the NodeClaims left unhinted.
func FillPods(claims []*simulation.NodeClaim) map[types.UID]bool {
	groups := map[string][]*corev1.Pod{}
	for _, nc := range claims {
		for _, pod := range nc.Pods {
			if key, ok := fillKey(pod); ok {
				groups[key] = append(groups[key], pod)
			}
		}
	}
	var best string
	for key, pods := range groups {
		if len(pods) < 2 {
			continue
		}
		if best == "" || len(pods) > len(groups[best]) ||
			len(pods) == len(groups[best]) && cmp.Or(smallerFirst(pods[0], groups[best][0]), strings.Compare(key, best)) < 0 {
			best = key
		}
	}
	out := map[types.UID]bool{}
	for _, pod := range groups[best] {
		out[pod.UID] = true
	}
	return out
}

// smallerFirst orders pods by their cpu request, then memory. Of two
// groups as large as each other, the one of smaller pods is the fill: a
// fill pod the scheduler places elsewhere than planned needs a hole its
// size, and holes the size of the smaller pods are the more common (in
// a benchmark run with an even split of 500 pods at 900m and 500 at
// 3500m, the large fill's misplaced pods found no room and took four more
// nodes).
func smallerFirst(a, b *corev1.Pod) int {
	ra, rb := scheduling.PodRequests(a), scheduling.PodRequests(b)
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		qa, qb := ra[name], rb[name]
		if c := qa.Cmp(qb); c != 0 {
			return c
		}
	}
	return 0
}

// fillKey groups pods by controller and requests; ok is false for pods
// whose placement depends on more than resources and labels.
func fillKey(pod *corev1.Pod) (string, bool) {
	owner := metav1.GetControllerOf(pod)
	if owner == nil {
		return "", false
	}
	if a := pod.Spec.Affinity; a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil) {
		return "", false
	}
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.DoNotSchedule {
			return "", false
		}
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return "", false
		}
	}
	if len(scheduling.PodHostPorts(pod)) > 0 {
		return "", false
	}
	var b strings.Builder
	b.WriteString(string(owner.UID))
	requests := scheduling.PodRequests(pod)
	names := slices.Sorted(maps.Keys(requests))
	for _, name := range names {
		q := requests[name]
		b.WriteString("|" + string(name) + "=" + q.String())
	}
	return b.String(), true
}
