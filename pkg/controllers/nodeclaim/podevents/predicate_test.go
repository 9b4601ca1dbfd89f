package podevents

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func TestPodEventPassesOnlyNodeEvents(t *testing.T) {
	bound := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	now := metav1.Now()
	for name, tc := range map[string]struct {
		change func(*corev1.Pod)
		want   bool
	}{
		"bound":             {func(p *corev1.Pod) { p.Spec.NodeName = "n2" }, true},
		"terminating":       {func(p *corev1.Pod) { p.DeletionTimestamp = &now }, true},
		"succeeded":         {func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, true},
		"failed":            {func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, true},
		"running":           {func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }, false},
		"ready condition":   {func(p *corev1.Pod) { p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady}} }, false},
		"labels":            {func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }, false},
		"container started": {func(p *corev1.Pod) { p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c"}} }, false},
	} {
		after := bound.DeepCopy()
		tc.change(after)
		if got := podEvent.Update(event.UpdateEvent{ObjectOld: bound, ObjectNew: after}); got != tc.want {
			t.Errorf("%s: passed = %t, want %t", name, got, tc.want)
		}
	}
}
