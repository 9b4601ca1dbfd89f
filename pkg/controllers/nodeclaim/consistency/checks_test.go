package consistency

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func TestNodeShapeIssues(t *testing.T) {
	expected := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"),
		"nvidia.com/gpu": resource.MustParse("1")}
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	initialized := func() *test.NodeClaimWrapper {
		return test.MakeNodeClaim("c").Requests(requests).Capacity(expected).
			Condition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", time.Unix(0, 0))
	}
	tests := map[string]struct {
		nodeClaim *karpv1.NodeClaim
		node      *corev1.Node
		want      []string
	}{
		"as expected": {
			nodeClaim: initialized().Obj(),
			node:      test.MakeNode("n").Capacity("cpu", "4", "memory", "16Gi").Obj(),
		},
		"within 10% is fine": {
			nodeClaim: initialized().Obj(),
			node:      test.MakeNode("n").Capacity("cpu", "4", "memory", "15Gi").Obj(),
		},
		"memory short by more than 10%": {
			nodeClaim: initialized().Obj(),
			node:      test.MakeNode("n").Capacity("cpu", "4", "memory", "14Gi").Obj(),
			want:      []string{"expected 16Gi of resource memory, but found 14Gi (87.5% of expected)"},
		},
		"every short resource, in name order": {
			nodeClaim: initialized().Obj(),
			node:      test.MakeNode("n").Capacity("cpu", "2", "memory", "8Gi").Obj(),
			want: []string{"expected 4 of resource cpu, but found 2 (50.0% of expected)",
				"expected 16Gi of resource memory, but found 8Gi (50.0% of expected)"},
		},
		"a resource no pod requested is not checked": {
			// The GPU is expected but missing; nothing asked for it.
			nodeClaim: initialized().Obj(),
			node:      test.MakeNode("n").Capacity("cpu", "4", "memory", "16Gi").Obj(),
		},
		"not initialized yet": {
			nodeClaim: test.MakeNodeClaim("c").Requests(requests).Capacity(expected).Obj(),
			node:      test.MakeNode("n").Capacity("cpu", "1", "memory", "1Gi").Obj(),
		},
		"deleting": {
			nodeClaim: deleting(initialized().Obj()),
			node:      test.MakeNode("n").Capacity("cpu", "1", "memory", "1Gi").Obj(),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, nodeShapeIssues(tc.nodeClaim, tc.node)); diff != "" {
				t.Errorf("issues (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestTerminationIssues(t *testing.T) {
	app := func(name string) *test.PodWrapper { return test.MakePod(name).NodeName("n").Label("app", "web") }
	tests := map[string]struct {
		deleting bool
		pods     []*corev1.Pod
		pdbs     []policyv1.PodDisruptionBudget
		want     []string
	}{
		"a budget allowing no disruption holds a pod": {
			deleting: true, pods: []*corev1.Pod{app("a").Obj()}, pdbs: []policyv1.PodDisruptionBudget{pdb("default", 0, false)},
			want: []string{`can't drain node, PDB "default/web" is blocking evictions`},
		},
		"the budget allows a disruption": {
			deleting: true, pods: []*corev1.Pod{app("a").Obj()}, pdbs: []policyv1.PodDisruptionBudget{pdb("default", 1, false)},
		},
		"not deleting": {
			pods: []*corev1.Pod{app("a").Obj()}, pdbs: []policyv1.PodDisruptionBudget{pdb("default", 0, false)},
		},
		"the budget is in another namespace": {
			deleting: true, pods: []*corev1.Pod{app("a").Obj()}, pdbs: []policyv1.PodDisruptionBudget{pdb("other", 0, false)},
		},
		"the pod tolerates the disrupted taint and is not evicted": {
			deleting: true, pods: []*corev1.Pod{app("a").Toleration(corev1.Toleration{Key: karpv1.DisruptedTaintKey, Operator: corev1.TolerationOpExists}).Obj()},
			pdbs: []policyv1.PodDisruptionBudget{pdb("default", 0, false)},
		},
		"the pod is already terminating": {
			deleting: true, pods: []*corev1.Pod{app("a").Terminating(time.Unix(0, 0)).Obj()},
			pdbs: []policyv1.PodDisruptionBudget{pdb("default", 0, false)},
		},
		"a finished pod": {
			deleting: true, pods: []*corev1.Pod{app("a").Phase(corev1.PodSucceeded).Obj()},
			pdbs: []policyv1.PodDisruptionBudget{pdb("default", 0, false)},
		},
		"a mirror pod": {
			deleting: true, pods: []*corev1.Pod{app("a").Owner("Node", "n", "uid-n").Obj()},
			pdbs: []policyv1.PodDisruptionBudget{pdb("default", 0, false)},
		},
		"an unready pod under a budget that always lets unhealthy pods go": {
			deleting: true, pods: []*corev1.Pod{unready(app("a").Obj())}, pdbs: []policyv1.PodDisruptionBudget{pdb("default", 0, true)},
		},
		"a ready pod under that budget is held": {
			deleting: true, pods: []*corev1.Pod{app("a").Obj()}, pdbs: []policyv1.PodDisruptionBudget{pdb("default", 0, true)},
			want: []string{`can't drain node, PDB "default/web" is blocking evictions`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			nodeClaim := test.MakeNodeClaim("c").Obj()
			if tc.deleting {
				nodeClaim = deleting(nodeClaim)
			}
			pods := make([]corev1.Pod, 0, len(tc.pods))
			for _, p := range tc.pods {
				pods = append(pods, *p)
			}
			if diff := cmp.Diff(tc.want, terminationIssues(nodeClaim, pods, tc.pdbs)); diff != "" {
				t.Errorf("issues (-want,+got):\n%s", diff)
			}
		})
	}
}

func deleting(nc *karpv1.NodeClaim) *karpv1.NodeClaim {
	now := metav1.NewTime(time.Unix(1, 0))
	nc.DeletionTimestamp = &now
	return nc
}

func unready(pod *corev1.Pod) *corev1.Pod {
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	return pod
}

// pdb is a budget named web selecting app=web in namespace ns.
func pdb(ns string, allowed int32, alwaysAllowUnhealthy bool) policyv1.PodDisruptionBudget {
	out := policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
	if alwaysAllowUnhealthy {
		policy := policyv1.AlwaysAllow
		out.Spec.UnhealthyPodEvictionPolicy = &policy
	}
	return out
}
