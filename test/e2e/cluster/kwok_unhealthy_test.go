package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/localcluster"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// A running pod annotated karp.sh/kwok-ready=false turns not Ready, so the
// disruption controller counts it unhealthy in its PodDisruptionBudget;
// removing the annotation makes it Ready and healthy again.
func TestKWOKPodCanBeMadeUnhealthyOnRequest(t *testing.T) {
	f := framework.Current(t)
	ctx := t.Context()
	cl := f.Client
	node, pod := framework.ExpectNodeReadyAndPodRuns(t, cl, "kwok-unhealthy")
	framework.Mutate(t, cl, pod, func() { pod.Labels = map[string]string{"app": "kwok-unhealthy"} })
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: "kwok-unhealthy"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "kwok-unhealthy"}},
		},
	}
	framework.Create(t, cl, pdb)
	defer func() { _ = cl.Delete(ctx, pdb); _ = cl.Delete(ctx, pod); _ = cl.Delete(ctx, node) }()
	expect := func(ready bool, healthy int32) {
		t.Helper()
		framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
			if err := cl.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
				return false, err.Error()
			}
			if err := cl.Get(ctx, client.ObjectKeyFromObject(pdb), pdb); err != nil {
				return false, err.Error()
			}
			return framework.PodRunning(pod) == ready && pdb.Status.CurrentHealthy == healthy && pdb.Status.ExpectedPods == 1,
				fmt.Sprintf("pod ready=%v (want %v), pdb healthy %d of %d (want %d of 1)", framework.PodRunning(pod), ready,
					pdb.Status.CurrentHealthy, pdb.Status.ExpectedPods, healthy)
		})
	}
	expect(true, 1)
	framework.Mutate(t, cl, pod, func() {
		pod.Annotations = map[string]string{localcluster.KWOKReadyAnnotationKey: localcluster.KWOKNotReadyValue}
	})
	expect(false, 0)
	if pod.Status.Phase != corev1.PodRunning {
		t.Errorf("unhealthy pod phase %q, want Running", pod.Status.Phase)
	}
	framework.Mutate(t, cl, pod, func() { delete(pod.Annotations, localcluster.KWOKReadyAnnotationKey) })
	expect(true, 1)
}
