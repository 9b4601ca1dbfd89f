package disruption

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// TestDrainWaitsForSlowPodsInOrder puts a workload pod, a DaemonSet pod
// and a system-cluster-critical pod, each with a preStop hook that takes
// seconds, on one node, then deletes its NodeClaim. Sampling every 250 ms:
// each pod is seen Terminating on the node, the DaemonSet pod is evicted
// only once the workload pod is gone, the critical pod only once the
// DaemonSet pod is gone, and the Node exists as long as any of them does.
func TestDrainWaitsForSlowPodsInOrder(t *testing.T) {
	const name = "e2e-drain-order"
	nodePool := test.MakeNodePool(name).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		// Room for the three small pods on the first node.
		Requirement(kwokv1alpha1.InstanceCPULabelKey, corev1.NodeSelectorOpIn, "4").
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmpty).
		ConsolidateAfter(karpv1.MustParseNillableDuration(karpv1.Never)).
		Obj()
	f, _ := framework.RunPool(t, name, nodePool)
	ctx := t.Context()
	cl := f.Client

	workload := slowPod(name, "workload", 6)
	framework.Create(t, cl, workload)
	nodeName := waitPodRunning(t, cl, workload)
	critical := slowPod(name, "critical", 6)
	critical.Spec.PriorityClassName = "system-cluster-critical"
	critical.Spec.NodeSelector = map[string]string{corev1.LabelHostname: nodeName}
	framework.Create(t, cl, critical)
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec:       slowPod(name, "agent", 6).Spec,
			},
		},
	}
	framework.Create(t, cl, ds)
	waitPodRunning(t, cl, critical)
	var agent *corev1.Pod
	framework.Eventually(t, 90*time.Second, func(ctx context.Context) (bool, string) {
		var list corev1.PodList
		if err := cl.List(ctx, &list, client.InNamespace(name), client.MatchingLabels{"app": "agent"}); err != nil {
			return false, err.Error()
		}
		for i := range list.Items {
			if list.Items[i].Spec.NodeName == nodeName && framework.PodRunning(&list.Items[i]) {
				agent = &list.Items[i]
				return true, ""
			}
		}
		return false, fmt.Sprintf("no running DaemonSet pod on %s; %s", nodeName, framework.Describe(ctx, cl, name))
	})

	nodeClaim := framework.NodeClaimOfNode(t, cl, nodeName)
	pods := []*corev1.Pod{workload, agent, critical} // drain order
	type seen struct{ terminating, gone bool }
	state := make([]seen, len(pods))
	if err := cl.Delete(ctx, nodeClaim); err != nil {
		t.Fatalf("deleting nodeclaim: %v", err)
	}
	framework.Eventually(t, 80*time.Second, func(ctx context.Context) (bool, string) {
		// Read the pods first, then the Node: a pod read as present was
		// still there when the Node was read afterwards.
		for i, pod := range pods {
			var cur corev1.Pod
			err := cl.Get(ctx, client.ObjectKeyFromObject(pod), &cur)
			switch {
			case apierrors.IsNotFound(err):
				state[i].gone = true
			case err != nil:
				return false, err.Error()
			case cur.UID != pod.UID:
				state[i].gone = true
			case cur.DeletionTimestamp != nil:
				if !state[i].terminating {
					for j := range i {
						if !state[j].gone {
							t.Errorf("%s pod %s terminating while %s pod %s is still on the node", pod.Name, pod.Name, pods[j].Name, pods[j].Name)
						}
					}
				}
				state[i].terminating = true
			}
		}
		nodeErr := cl.Get(ctx, types.NamespacedName{Name: nodeName}, &corev1.Node{})
		for i, pod := range pods {
			if !state[i].gone && apierrors.IsNotFound(nodeErr) {
				t.Errorf("node %s deleted while pod %s was still on it", nodeName, pod.Name)
				state[i].gone = true
			}
		}
		if nodeErr == nil || !slices.ContainsFunc(state, func(s seen) bool { return !s.gone }) {
			return apierrors.IsNotFound(nodeErr), fmt.Sprintf("pods %+v, node %v; %s", state, nodeErr, framework.Describe(ctx, cl, name))
		}
		return false, ""
	})
	for i, pod := range pods {
		if !state[i].terminating {
			t.Errorf("pod %s was never seen Terminating on the node", pod.Name)
		}
		if reasons := framework.EventReasons(t, cl, name, "Pod", pod.Name); !slices.Contains(reasons, "Evicted") {
			t.Errorf("pod %s left without an eviction (events %v)", pod.Name, reasons)
		}
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		err := cl.Get(ctx, client.ObjectKeyFromObject(nodeClaim), &karpv1.NodeClaim{})
		return apierrors.IsNotFound(err), fmt.Sprintf("nodeclaim %s still there (%v)", nodeClaim.Name, err)
	})
}

// slowPod is a pod of the pool whose preStop hook keeps it Terminating
// for its whole grace period of grace seconds.
func slowPod(pool, name string, grace int64) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: pool, Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{karpv1.NodePoolLabelKey: pool},
			TerminationGracePeriodSeconds: ptr.To(grace),
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: test.ResourceList("cpu", "100m", "memory", "64Mi")},
				Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
					Exec: &corev1.ExecAction{Command: []string{"sleep", fmt.Sprint(grace)}},
				}},
			}},
		},
	}
}

// waitPodRunning waits until pod runs and returns its node.
func waitPodRunning(t *testing.T, cl client.Client, pod *corev1.Pod) string {
	t.Helper()
	framework.Eventually(t, 90*time.Second, func(ctx context.Context) (bool, string) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err.Error()
		}
		return framework.PodRunning(pod), fmt.Sprintf("pod %s phase %q node %q; %s", pod.Name, pod.Status.Phase, pod.Spec.NodeName, framework.Describe(ctx, cl, pod.Namespace))
	})
	return pod.Spec.NodeName
}
