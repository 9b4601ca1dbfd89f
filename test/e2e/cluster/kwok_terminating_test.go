package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/localcluster"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// A deleted pod with a preStop hook stays Terminating until its grace
// period runs out, as does one annotated with kwok's deletion delay; a pod
// with neither goes at once, as a kubelet whose container exits on SIGTERM
// would remove it.
func TestKWOKKeepsTerminatingPodsUntilTheirGracePeriodEnds(t *testing.T) {
	f := framework.Current(t)
	ctx := t.Context()
	node, plain := framework.ExpectNodeReadyAndPodRuns(t, f.Client, "kwok-terminating")

	preStop := framework.MakePodOn("default", node.Name+"-prestop", node.Name)
	preStop.Spec.TerminationGracePeriodSeconds = ptr.To[int64](25)
	preStop.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
		Exec: &corev1.ExecAction{Command: []string{"sleep", "20"}},
	}}
	delayed := framework.MakePodOn("default", node.Name+"-delayed", node.Name)
	delayed.Annotations = map[string]string{localcluster.KWOKPodDeleteDelayAnnotationKey: "25s"}
	pods := []*corev1.Pod{preStop, delayed}
	for _, pod := range pods {
		if err := f.Client.Create(ctx, pod); err != nil {
			t.Fatalf("creating pod %s: %v", pod.Name, err)
		}
	}
	framework.Eventually(t, 90*time.Second, func(ctx context.Context) (bool, string) {
		for _, pod := range pods {
			if err := f.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
				return false, err.Error()
			}
			if !framework.PodRunning(pod) {
				return false, fmt.Sprintf("pod %s phase %q", pod.Name, pod.Status.Phase)
			}
		}
		return true, ""
	})

	for _, pod := range append(pods, plain) {
		if err := f.Client.Delete(ctx, pod); err != nil {
			t.Fatalf("deleting pod %s: %v", pod.Name, err)
		}
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		err := f.Client.Get(ctx, client.ObjectKeyFromObject(plain), &corev1.Pod{})
		return apierrors.IsNotFound(err), fmt.Sprintf("pod %s without a preStop hook still there (%v)", plain.Name, err)
	})
	for _, pod := range pods {
		if err := f.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			t.Fatalf("pod %s went with the pod that had no reason to stay: %v", pod.Name, err)
		}
		if pod.DeletionTimestamp == nil {
			t.Errorf("pod %s has no deletion timestamp", pod.Name)
		}
	}
	framework.Eventually(t, 90*time.Second, func(ctx context.Context) (bool, string) {
		for _, pod := range pods {
			if err := f.Client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}); !apierrors.IsNotFound(err) {
				return false, fmt.Sprintf("pod %s still there after its grace period (%v)", pod.Name, err)
			}
		}
		return true, ""
	})
	_ = f.Client.Delete(ctx, node)
}
