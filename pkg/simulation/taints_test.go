package simulation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

var gpuTaint = corev1.Taint{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}

func taintedPool(name string, taints ...corev1.Taint) *NodePool {
	w := test.MakeNodePool(name)
	for _, t := range taints {
		w = w.Taint(t)
	}
	return withTypes(w.Obj())
}

func TestSolveTaints(t *testing.T) {
	gpuPool := []*NodePool{taintedPool("gpu", gpuTaint)}
	pod := func(tols ...corev1.Toleration) []*corev1.Pod {
		return onePod(func(w *test.PodWrapper) *test.PodWrapper {
			for _, tol := range tols {
				w = w.Toleration(tol)
			}
			return w
		})
	}
	runCases(t, map[string]solveCase{
		"a taint not tolerated": {
			pools: gpuPool, pods: pod(),
			reasons: map[string]string{"p": "NodePool gpu: taint nvidia.com/gpu=true:NoSchedule not tolerated [TaintNotTolerated]"},
		},
		"tolerated with Equal": {
			pools: gpuPool, pods: pod(corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}),
			claims: n(1),
		},
		"tolerated with Exists on the key": {
			pools: gpuPool, pods: pod(corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}),
			claims: n(1),
		},
		"tolerated by an empty-key Exists": {
			pools: gpuPool, pods: pod(corev1.Toleration{Operator: corev1.TolerationOpExists}),
			claims: n(1),
		},
		"a toleration with another value": {
			pools: gpuPool, pods: pod(corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpEqual, Value: "false"}),
			reasons: map[string]string{"p": "NodePool gpu: taint nvidia.com/gpu=true:NoSchedule not tolerated [TaintNotTolerated]"},
		},
		"a toleration for another effect": {
			pools: gpuPool, pods: pod(corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}),
			reasons: map[string]string{"p": "NodePool gpu: taint nvidia.com/gpu=true:NoSchedule not tolerated [TaintNotTolerated]"},
		},
		"a NoExecute taint not tolerated": {
			pools:   []*NodePool{taintedPool("infra", corev1.Taint{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectNoExecute})},
			pods:    pod(),
			reasons: map[string]string{"p": "NodePool infra: taint dedicated=infra:NoExecute not tolerated [TaintNotTolerated]"},
		},
		"a PreferNoSchedule taint does not block": {
			pools:  []*NodePool{taintedPool("soft", corev1.Taint{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule})},
			pods:   pod(),
			claims: n(1),
		},
		"a PreferNoSchedule NodePool is avoided when another fits": {
			pools: []*NodePool{withTypes(test.MakeNodePool("soft").Weight(50).Taint(corev1.Taint{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}).Obj()),
				withTypes(test.MakeNodePool("clean").Weight(1).Obj())},
			pods: pod(), inPool: map[string]string{"p": "clean"},
		},
		"startup taints need no toleration": {
			pools: []*NodePool{withTypes(test.MakeNodePool("default").StartupTaint(corev1.Taint{Key: "agent-not-ready", Effect: corev1.TaintEffectNoSchedule}).Obj())},
			pods:  pod(), claims: n(1),
		},
		"a tainted heavier NodePool falls back to an untainted one": {
			pools: []*NodePool{withTypes(test.MakeNodePool("gpu").Weight(50).Taint(gpuTaint).Obj()), withTypes(test.MakeNodePool("general").Weight(1).Obj())},
			pods:  pod(), inPool: map[string]string{"p": "general"},
		},
		"two taints, one tolerated": {
			pools:   []*NodePool{taintedPool("two", gpuTaint, corev1.Taint{Key: "team", Value: "ml", Effect: corev1.TaintEffectNoSchedule})},
			pods:    pod(corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}),
			reasons: map[string]string{"p": "NodePool two: taint team=ml:NoSchedule not tolerated [TaintNotTolerated]"},
		},
	})
}

func TestSolveExistingNodes(t *testing.T) {
	free := func(name string) *corev1.Node {
		return test.MakeNode(name).Label(corev1.LabelArchStable, "amd64").Label(corev1.LabelTopologyZone, zoneA).
			Allocatable("cpu", "4", "memory", "8Gi", "pods", "20").Obj()
	}
	pod := onePod(func(w *test.PodWrapper) *test.PodWrapper { return w })
	uninit := existingNode(test.MakeNode("a-starting").Allocatable("cpu", "4", "memory", "8Gi", "pods", "20").
		Taint(corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}).
		Taint(corev1.Taint{Key: "agent", Effect: corev1.TaintEffectNoSchedule}).Obj())
	uninit.Initialized = false
	uninit.StartupTaints = []corev1.Taint{{Key: "agent", Effect: corev1.TaintEffectNoSchedule}}
	notReady := existingNode(test.MakeNode("n").Allocatable("cpu", "4", "memory", "8Gi", "pods", "20").
		Taint(corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}).Obj())
	deleting := existingNode(free("old"), test.MakePod("moved").Requests("cpu", "1").Owner("ReplicaSet", "rs", "rs-uid").Obj(),
		test.MakePod("agent").Owner("DaemonSet", "agent", "ds-uid").Obj())
	deleting.MarkedForDeletion = true
	inflight := &Node{Name: "inflight", Labels: map[string]string{karpv1.NodePoolLabelKey: "default"},
		Requirements: zoneReqs(zoneC), Allocatable: test.ResourceList("cpu", "4", "memory", "8Gi", "pods", "20")}
	runCases(t, map[string]solveCase{
		"a pod that fits existing capacity": {
			nodes: []*Node{existingNode(free("n"))}, pods: pod, claims: n(0), onNode: map[string]string{"p": "n"},
		},
		"a full node": {
			nodes: []*Node{existingNode(free("n"), test.MakePod("busy").Requests("cpu", "3500m").Obj())},
			pods:  pod, claims: n(1),
		},
		"a tainted node": {
			nodes: []*Node{existingNode(test.MakeNode("n").Allocatable("cpu", "4", "memory", "8Gi", "pods", "20").Taint(gpuTaint).Obj())},
			pods:  pod, claims: n(1),
		},
		"a node without the selected label": {
			nodes: []*Node{existingNode(free("n"))},
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.NodeSelector(map[string]string{corev1.LabelArchStable: "arm64"})
			}),
			onType: map[string]string{"p": "arm-medium"},
		},
		"pods of a deleting node move, its capacity is not used": {
			nodes: []*Node{deleting}, pods: pod, claims: n(1), together: [][]string{{"p", "moved"}},
			check: func(t *testing.T, res *Result) {
				if len(res.NodeClaims[0].Pods) != 2 {
					t.Fatalf("DaemonSet pod rescheduled: %d pods", len(res.NodeClaims[0].Pods))
				}
			},
		},
		"an initializing node ignores startup and ephemeral taints": {
			nodes: []*Node{uninit}, pods: pod, claims: n(0), onNode: map[string]string{"p": "a-starting"},
		},
		"an initialized node that is not ready": {
			nodes: []*Node{notReady}, pods: pod, claims: n(1),
		},
		"an in-flight NodeClaim takes pods": {
			nodes: []*Node{inflight}, pods: pod, claims: n(0), onNode: map[string]string{"p": "inflight"},
		},
		"an in-flight NodeClaim in another zone": {
			nodes: []*Node{inflight},
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.NodeSelector(map[string]string{corev1.LabelTopologyZone: zoneA})
			}),
			claims: n(1),
		},
		"initialized nodes are tried first": {
			nodes: []*Node{uninit, existingNode(free("z-ready"))}, pods: pod, onNode: map[string]string{"p": "z-ready"},
		},
		"matchFields pins a pod to a named node": {
			nodes:  []*Node{existingNode(free("a")), existingNode(free("b"))},
			pods:   []*corev1.Pod{withMatchFields(test.MakePod("p").Obj(), "b")},
			onNode: map[string]string{"p": "b"},
		},
		"matchFields naming a missing node": {
			pods:    []*corev1.Pod{withMatchFields(test.MakePod("p").Obj(), "gone")},
			reasons: map[string]string{"p": "NodePool default: incompatible requirements: label kubernetes.io/hostname is not defined by the NodePool (requires kubernetes.io/hostname In [gone]) [IncompatibleRequirements]"},
		},
		"existing capacity wins over a preference": {
			nodes: []*Node{existingNode(free("n"))},
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.PreferredNodeAffinity(10, req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zoneB))
			}),
			claims: n(0), onNode: map[string]string{"p": "n"},
		},
		"a preference still picks among new NodeClaims": {
			nodes: []*Node{existingNode(free("n"), test.MakePod("busy").Requests("cpu", "4").Obj())},
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.PreferredNodeAffinity(10, req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zoneB))
			}),
			inZone: map[string]string{"p": zoneB},
		},
		"nodes are tried by name": {
			nodes: []*Node{existingNode(free("b")), existingNode(free("a"))}, pods: pod, onNode: map[string]string{"p": "a"},
		},
		"a missing DaemonSet pod reserves room": {
			nodes:      []*Node{existingNode(free("n"), test.MakePod("busy").Requests("cpu", "2500m").Obj())},
			daemonSets: []*appsDaemonSet{test.MakeDaemonSet("agent").Requests("cpu", "1").Obj()},
			pods:       pod, claims: n(1),
		},
		"a running DaemonSet pod is not reserved twice": {
			nodes: []*Node{existingNode(free("n"), test.MakePod("busy").Requests("cpu", "2").Obj(),
				test.MakeDaemonSet("agent").Requests("cpu", "1").Pod("n"))},
			daemonSets: []*appsDaemonSet{test.MakeDaemonSet("agent").Requests("cpu", "1").Obj()},
			pods:       pod, claims: n(0), onNode: map[string]string{"p": "n"},
		},
		"a host port taken on the node": {
			nodes:  []*Node{existingNode(free("n"), test.MakePod("web").HostPort(8080).Obj())},
			pods:   onePod(func(w *test.PodWrapper) *test.PodWrapper { return w.HostPort(8080) }),
			claims: n(1),
		},
		"bound pods count for topology": {
			nodes: []*Node{existingNode(free("n"), test.MakePod("a").Label("app", "web").Obj())},
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.Label("app", "web").PodAntiAffinity(corev1.LabelHostname, map[string]string{"app": "web"})
			}),
			claims: n(1),
		},
		"terminating bound pods do not count for topology": {
			nodes: []*Node{existingNode(free("n"), test.MakePod("a").Label("app", "web").Terminating(testNow).Obj())},
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.Label("app", "web").PodAntiAffinity(corev1.LabelHostname, map[string]string{"app": "web"})
			}),
			claims: n(0), onNode: map[string]string{"p": "n"},
		},
	})
}

func withMatchFields(p *corev1.Pod, node string) *corev1.Pod {
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}}
	return p
}
