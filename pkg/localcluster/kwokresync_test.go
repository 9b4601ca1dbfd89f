package localcluster

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var resyncNow = time.Date(2026, 11, 26, 2, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(resyncNow.Add(-d)) }

func TestPodOverdue(t *testing.T) {
	withHook := []corev1.Container{{Name: "app", Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
		Exec: &corev1.ExecAction{Command: []string{"sleep", "60"}}}}}}
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		want string // a part of the reason; "" when not overdue
	}{{
		name: "bound and Pending past the wait",
		pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(time.Minute)}, Status: corev1.PodStatus{
			Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: ago(20 * time.Second)}}}},
		want: "bound, Pending for 20s",
	}, {
		name: "bound a moment ago: kwok still has time",
		pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(time.Minute)}, Status: corev1.PodStatus{
			Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: ago(5 * time.Second)}}}},
	}, {
		name: "created bound, no condition yet: counted from creation",
		pod:  corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(30 * time.Second)}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
		want: "bound, Pending for 30s",
	}, {
		name: "Running and Ready",
		pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(time.Hour)}, Status: corev1.PodStatus{
			Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: ago(time.Hour)}}}},
	}, {
		name: "Running, not Ready past the wait",
		pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(time.Hour)}, Status: corev1.PodStatus{
			Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: ago(time.Minute)}}}},
		want: "Running, Ready=False for 1m0s",
	}, {
		name: "Running, not Ready, written a moment ago: pod-ready-again still has time",
		pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(time.Hour), ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "kubectl", Time: ptr.To(ago(5 * time.Second))}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: ago(time.Minute)}}}},
	}, {
		name: "Running, kept not Ready by upstream's stage label",
		pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(time.Hour), Labels: map[string]string{KWOKStageLabelKey: KWOKStageUnhealthy}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: ago(time.Minute)}}}},
	}, {
		name: "Running, kept not Ready by its annotation",
		pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(time.Hour), Annotations: map[string]string{KWOKReadyAnnotationKey: KWOKNotReadyValue}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: ago(time.Hour)}}}},
	}, {
		name: "bound, Pending within its ready delay and the wait",
		pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(30 * time.Second),
			Annotations: map[string]string{KWOKPodReadyDelayAnnotationKey: "20s"}}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
	}, {
		name: "bound, Pending past its ready delay and the wait",
		pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(time.Minute),
			Annotations: map[string]string{KWOKPodReadyDelayAnnotationKey: "20s"}}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
		want: "bound, Pending for 40s",
	}, {
		name: "deleted without a hook, gone long ago by kwok's rule",
		pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(time.Hour),
			DeletionTimestamp: ptr.To(metav1.NewTime(resyncNow.Add(10 * time.Second))), DeletionGracePeriodSeconds: ptr.To[int64](30)}},
		want: "deleted, still there 20s after",
	}, {
		name: "deleted with a preStop hook: due at its deletion timestamp",
		pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(time.Hour),
			DeletionTimestamp: ptr.To(metav1.NewTime(resyncNow.Add(10 * time.Second))), DeletionGracePeriodSeconds: ptr.To[int64](30)},
			Spec: corev1.PodSpec{Containers: withHook}},
	}, {
		name: "deleted with a delay annotation still running",
		pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(time.Hour), Annotations: map[string]string{KWOKPodDeleteDelayAnnotationKey: "90s"},
			DeletionTimestamp: ptr.To(metav1.NewTime(resyncNow.Add(-30 * time.Second))), DeletionGracePeriodSeconds: ptr.To[int64](30)}},
	}, {
		name: "deleted with a delay annotation long over",
		pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(time.Hour), Annotations: map[string]string{KWOKPodDeleteDelayAnnotationKey: "10s"},
			DeletionTimestamp: ptr.To(metav1.NewTime(resyncNow.Add(-30 * time.Second))), DeletionGracePeriodSeconds: ptr.To[int64](30)}},
		want: "deleted, still there 50s after",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := podOverdue(&tc.pod, resyncNow)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("podOverdue = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNodeOverdue(t *testing.T) {
	ready := func(s corev1.ConditionStatus, since time.Duration) []corev1.NodeCondition {
		return []corev1.NodeCondition{{Type: corev1.NodeReady, Status: s, LastTransitionTime: ago(since)}}
	}
	notReadyAnnotation := map[string]string{KWOKReadyAnnotationKey: KWOKNotReadyValue}
	for _, tc := range []struct {
		name string
		node corev1.Node
		want string
	}{{
		name: "new and not Ready yet",
		node: corev1.Node{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(5 * time.Second)}},
	}, {
		name: "never made Ready",
		node: corev1.Node{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(time.Minute)}},
		want: "Ready=Unknown for 1m0s",
	}, {
		name: "Ready",
		node: corev1.Node{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(time.Hour)}, Status: corev1.NodeStatus{Conditions: ready(corev1.ConditionTrue, time.Hour)}},
	}, {
		name: "marked Unknown, left so",
		node: corev1.Node{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(time.Hour)}, Status: corev1.NodeStatus{Conditions: ready(corev1.ConditionUnknown, 20*time.Second)}},
		want: "Ready=Unknown for 20s",
	}, {
		name: "marked Unknown a moment ago",
		node: corev1.Node{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(time.Hour)}, Status: corev1.NodeStatus{Conditions: ready(corev1.ConditionUnknown, 2*time.Second)}},
	}, {
		name: "labelled with upstream's unhealthy stage: left as written",
		node: corev1.Node{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(time.Hour), Labels: map[string]string{KWOKStageLabelKey: KWOKStageUnhealthy}},
			Status: corev1.NodeStatus{Conditions: ready(corev1.ConditionFalse, time.Hour)}},
	}, {
		name: "annotated not ready and not Ready",
		node: corev1.Node{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(time.Hour), Annotations: notReadyAnnotation}, Status: corev1.NodeStatus{Conditions: ready(corev1.ConditionFalse, time.Hour)}},
	}, {
		name: "annotated not ready, still Ready",
		node: corev1.Node{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(time.Hour), Annotations: notReadyAnnotation}, Status: corev1.NodeStatus{Conditions: ready(corev1.ConditionTrue, time.Hour)}},
		want: "Ready=True for 1h0m0s",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := nodeOverdue(&tc.node, resyncNow)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("nodeOverdue = %q, want %q", got, tc.want)
			}
		})
	}
}
