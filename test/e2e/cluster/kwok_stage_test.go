package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/localcluster"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// stageHold is how long the test watches that kwok leaves an object
// labelled kwok.x-k8s.io/stage=unhealthy as it is: past pod-ready-again's
// longest delay (11 s) and the cluster's resync of what kwok left behind
// (15 s, checked every 5 s), so either would have acted by then.
const stageHold = 25 * time.Second

// Specs written for upstream Karpenter's kind + kwok environment label a
// pod kwok.x-k8s.io/stage=unhealthy for one that runs and is never Ready,
// and a node so for one whose conditions kwok leaves as the test writes
// them: the local cluster honours both, and removing the label lets the
// usual stages make each Ready again.
func TestKWOKHonoursUpstreamStageLabels(t *testing.T) {
	f := framework.Current(t)
	ctx := t.Context()
	cl := f.Client
	node, running := framework.ExpectNodeReadyAndPodRuns(t, cl, "kwok-stage")
	pod := framework.MakePodOn("default", "kwok-stage-unhealthy", node.Name)
	pod.Labels = map[string]string{localcluster.KWOKStageLabelKey: localcluster.KWOKStageUnhealthy}
	framework.Create(t, cl, pod)
	defer func() { _ = cl.Delete(ctx, pod); _ = cl.Delete(ctx, running); _ = cl.Delete(ctx, node) }()

	// The pod runs, not Ready from the start.
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err.Error()
		}
		return pod.Status.Phase == corev1.PodRunning, fmt.Sprintf("phase %q", pod.Status.Phase)
	})
	if got := framework.PodCondition(pod, corev1.PodReady); got != corev1.ConditionFalse {
		t.Fatalf("unhealthy-stage pod Running with Ready=%q, want False from the start", got)
	}

	// The node: labelled, then its Ready condition written False.
	framework.Mutate(t, cl, node, func() { node.Labels[localcluster.KWOKStageLabelKey] = localcluster.KWOKStageUnhealthy })
	const reason, message = "StageTest", "written by the test"
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return err
		}
		for i := range node.Status.Conditions {
			if c := &node.Status.Conditions[i]; c.Type == corev1.NodeReady {
				c.Status, c.Reason, c.Message, c.LastTransitionTime = corev1.ConditionFalse, reason, message, metav1.Now()
			}
		}
		return cl.Status().Update(ctx, node)
	}); err != nil {
		t.Fatalf("writing the node's Ready condition: %v", err)
	}

	// Neither kwok nor the resync moves either of them on.
	time.Sleep(stageHold)
	if err := cl.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		t.Fatal(err)
	}
	if got := framework.PodCondition(pod, corev1.PodReady); got != corev1.ConditionFalse {
		t.Errorf("after %s the unhealthy-stage pod has Ready=%q, want False", stageHold, got)
	}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && (c.Status != corev1.ConditionFalse || c.Reason != reason) {
			t.Errorf("after %s the unhealthy-stage node has Ready=%s (%s: %s), want False as written", stageHold, c.Status, c.Reason, c.Message)
		}
	}

	// Without the label both are made Ready again.
	framework.Mutate(t, cl, pod, func() { delete(pod.Labels, localcluster.KWOKStageLabelKey) })
	framework.Mutate(t, cl, node, func() { delete(node.Labels, localcluster.KWOKStageLabelKey) })
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err.Error()
		}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return false, err.Error()
		}
		return framework.PodRunning(pod) && framework.NodeReady(node),
			fmt.Sprintf("pod Ready=%q, node ready %v", framework.PodCondition(pod, corev1.PodReady), framework.NodeReady(node))
	})
}
