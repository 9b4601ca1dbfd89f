package simulation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karp-autoscaler/karp/pkg/test"
)

func limitRange(namespace string, defaults, defaultRequests corev1.ResourceList) corev1.LimitRange {
	return corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "limits", Namespace: namespace},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Default: defaults, DefaultRequest: defaultRequests}}}}
}

func TestSolveResources(t *testing.T) {
	runCases(t, map[string]solveCase{
		"a small pod gets the cheapest type that fits": {
			pods:   []*corev1.Pod{test.MakePod("p").Requests("cpu", "1", "memory", "1Gi").Obj()},
			claims: n(1), onType: map[string]string{"p": "general-small"},
		},
		"three cpu picks the cheapest four-cpu type": {
			pods:   []*corev1.Pod{test.MakePod("p").Requests("cpu", "3").Obj()},
			claims: n(1), onType: map[string]string{"p": "arm-medium"},
		},
		"more cpu than any type": {
			pods:    []*corev1.Pod{test.MakePod("p").Requests("cpu", "100").Obj()},
			claims:  n(0),
			reasons: map[string]string{"p": "NodePool default: no instance type has 100 cpu (the largest allocatable is 8) [InstanceTypesTooSmall]"},
		},
		"a gpu request lands on the gpu type": {
			pods:   []*corev1.Pod{test.MakePod("p").Requests("cpu", "1", "nvidia.com/gpu", "2").Obj()},
			claims: n(1), onType: map[string]string{"p": "gpu-large"},
		},
		"more gpus than any type": {
			pods:    []*corev1.Pod{test.MakePod("p").Requests("nvidia.com/gpu", "8").Obj()},
			reasons: map[string]string{"p": "NodePool default: no instance type has 8 nvidia.com/gpu (the largest allocatable is 4) [InstanceTypesTooSmall]"},
		},
		"an init container larger than the app sizes the node": {
			pods: []*corev1.Pod{test.MakePod("p").Requests("cpu", "1").
				InitContainer("init", test.ResourceList("cpu", "3"), false).Obj()},
			onType: map[string]string{"p": "arm-medium"},
		},
		"an init container smaller than the app does not": {
			pods: []*corev1.Pod{test.MakePod("p").Requests("cpu", "1500m").
				InitContainer("init", test.ResourceList("cpu", "1"), false).Obj()},
			onType: map[string]string{"p": "general-small"},
		},
		"a sidecar adds to the app": {
			pods: []*corev1.Pod{test.MakePod("p").Requests("cpu", "1").
				InitContainer("proxy", test.ResourceList("cpu", "2"), true).Obj()},
			onType: map[string]string{"p": "arm-medium"},
		},
		"pod overhead counts": {
			pods:   []*corev1.Pod{test.MakePod("p").Requests("cpu", "1500m").Overhead("cpu", "1").Obj()},
			onType: map[string]string{"p": "arm-medium"},
		},
		"every pod takes a pod slot": {
			pods:   pods("p", 11, func(w *test.PodWrapper) *test.PodWrapper { return w.Requests("cpu", "100m") }),
			claims: n(1), onType: map[string]string{"p-10": "arm-medium"},
		},
		"limits without requests count as requests": {
			pods:   []*corev1.Pod{test.MakePod("p").Limits("cpu", "3").Obj()},
			onType: map[string]string{"p": "arm-medium"},
		},
		"a LimitRange default request applies": {
			pods:        []*corev1.Pod{test.MakePod("p").Obj()},
			limitRanges: []corev1.LimitRange{limitRange("default", nil, test.ResourceList("cpu", "3"))},
			onType:      map[string]string{"p": "arm-medium"},
		},
		"a LimitRange default limit becomes the request": {
			pods:        []*corev1.Pod{test.MakePod("p").Obj()},
			limitRanges: []corev1.LimitRange{limitRange("default", test.ResourceList("cpu", "3"), nil)},
			onType:      map[string]string{"p": "arm-medium"},
		},
		"a LimitRange of another namespace does not apply": {
			pods:        []*corev1.Pod{test.MakePod("p").Obj()},
			limitRanges: []corev1.LimitRange{limitRange("other", nil, test.ResourceList("cpu", "3"))},
			onType:      map[string]string{"p": "general-small"},
		},
		"an explicit request wins over the LimitRange": {
			pods:        []*corev1.Pod{test.MakePod("p").Requests("cpu", "1").Obj()},
			limitRanges: []corev1.LimitRange{limitRange("default", nil, test.ResourceList("cpu", "3"))},
			onType:      map[string]string{"p": "general-small"},
		},
		"two pods share a node when growing it is cheaper": {
			pods:   pods("p", 2, func(w *test.PodWrapper) *test.PodWrapper { return w.Requests("cpu", "1500m") }),
			claims: n(1), onType: map[string]string{"p-0": "arm-medium"}, together: [][]string{{"p-0", "p-1"}},
		},
		"growing stops when a second node is cheaper": {
			pods:   pods("p", 8, func(w *test.PodWrapper) *test.PodWrapper { return w.Requests("cpu", "1") }),
			claims: n(2), onType: map[string]string{"p-0": "arm-medium", "p-7": "arm-medium"},
		},
		"a memory-heavy pod gets the memory type": {
			pods:   []*corev1.Pod{test.MakePod("p").Requests("cpu", "1", "memory", "20Gi").Obj()},
			onType: map[string]string{"p": "memory-large"},
		},
		"no gpu node without a gpu request": {
			pods:   []*corev1.Pod{test.MakePod("p").Requests("cpu", "8", "memory", "16Gi").Obj()},
			onType: map[string]string{"p": "general-large"},
		},
		"a resource no type has": {
			pods:    []*corev1.Pod{test.MakePod("p").Requests("ephemeral-storage", "10Gi").Obj()},
			reasons: map[string]string{"p": "NodePool default: no instance type has 10Gi ephemeral-storage (the largest allocatable is 0) [InstanceTypesTooSmall]"},
		},
		"resources that fit alone but not together": {
			pods: []*corev1.Pod{test.MakePod("p").Requests("cpu", "5", "memory", "20Gi").
				NodeAffinityTerm(req(labelFamily, corev1.NodeSelectorOpNotIn, "gpu")).Obj()},
			reasons: map[string]string{"p": "NodePool default: no instance type fits cpu=5, memory=20Gi together [InstanceTypesTooSmall]"},
		},
		"a pod with resource claims": {
			pods:    []*corev1.Pod{withClaim(test.MakePod("p").Requests("cpu", "1").Obj())},
			reasons: map[string]string{"p": "pod uses dynamic resource allocation (resourceClaims), which karp does not simulate [NotSimulated]"},
		},
		"a pod without requests": {
			pods:   []*corev1.Pod{test.MakePod("p").Obj()},
			onType: map[string]string{"p": "general-small"},
		},
		"largest pods are placed first": {
			pods: []*corev1.Pod{test.MakePod("small-1").Requests("cpu", "500m").Obj(), test.MakePod("small-2").Requests("cpu", "500m").Obj(),
				test.MakePod("big").Requests("cpu", "3").Obj()},
			claims: n(1), onType: map[string]string{"big": "arm-medium"}, together: [][]string{{"big", "small-1", "small-2"}},
		},
		"a running pod keeps its requests": {
			nodes: []*Node{existingNode(test.MakeNode("n").Allocatable("cpu", "2", "memory", "4Gi", "pods", "10").Obj(),
				test.MakePod("running").Requests("cpu", "2").Obj())},
			pods:   []*corev1.Pod{test.MakePod("p").Requests("cpu", "1").Obj()},
			claims: n(1),
		},
	})
}

func TestSolveTerminalPodsFreeCapacity(t *testing.T) {
	done := test.MakePod("done").Requests("cpu", "2").Obj()
	node := existingNode(test.MakeNode("n").Allocatable("cpu", "2", "memory", "4Gi", "pods", "10").Obj(), done)
	done.Status.Phase = corev1.PodSucceeded
	runCases(t, map[string]solveCase{
		"a succeeded pod's requests are free": {
			nodes: []*Node{node}, pods: []*corev1.Pod{test.MakePod("p").Requests("cpu", "1").Obj()},
			claims: n(0), onNode: map[string]string{"p": "n"},
		},
	})
}

func withClaim(p *corev1.Pod) *corev1.Pod {
	name := "gpu-claim"
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &name}}
	return p
}
