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

	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// The node lifecycle controller marks the pods of a node whose lease went
// stale not Ready: it flips their Ready condition to False and leaves
// ContainersReady as it was. A kubelet that is still running writes its
// own status back on its next sync; kwok, the kubelet here, must do the
// same, or a pod stays not Ready for good after a kwok or kube-apiserver
// restart. The test writes exactly what the controller writes and waits
// for kwok to make the pod Ready again.
func TestKWOKMakesReadyAgainAPodMarkedNotReadyForItsNode(t *testing.T) {
	f := framework.Current(t)
	cl := f.Client
	ctx := t.Context()
	node, pod := framework.ExpectNodeReadyAndPodRuns(t, cl, "kwok-resync")
	t.Cleanup(func() { _ = cl.Delete(context.Background(), pod); _ = cl.Delete(context.Background(), node) })

	var marked time.Time
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		for i, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady {
				now := metav1.Now()
				marked = now.Time
				pod.Status.Conditions[i].Status = corev1.ConditionFalse
				pod.Status.Conditions[i].LastTransitionTime = now
			}
		}
		return cl.Status().Update(ctx, pod)
	})
	if err != nil {
		t.Fatalf("marking the pod not Ready: %v", err)
	}
	if framework.PodRunning(pod) {
		t.Fatalf("pod still Ready after the update: %v", pod.Status.Conditions)
	}

	framework.Eventually(t, time.Minute, func(ctx context.Context) (bool, string) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err.Error()
		}
		return framework.PodRunning(pod) && framework.PodCondition(pod, corev1.ContainersReady) == corev1.ConditionTrue,
			fmt.Sprintf("pod phase %q conditions %v", pod.Status.Phase, pod.Status.Conditions)
	})
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.LastTransitionTime.Time.Before(marked.Truncate(time.Second)) {
			t.Errorf("Ready condition last changed at %v, before the pod was marked not Ready at %v", c.LastTransitionTime, marked)
		}
	}
}
