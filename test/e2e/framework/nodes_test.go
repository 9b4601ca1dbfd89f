package framework

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDaemonOnEachAndFits(t *testing.T) {
	node := func(name, cpu string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}
	}
	pod := func(app, nodeName, cpu string, phase corev1.PodPhase) corev1.Pod {
		ready := corev1.ConditionFalse
		if phase == corev1.PodRunning {
			ready = corev1.ConditionTrue
		}
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: app + "-" + nodeName, Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
			Status: corev1.PodStatus{Phase: phase, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}},
		}
	}
	nodes := []corev1.Node{node("a", "2"), node("b", "2")}
	for name, tc := range map[string]struct {
		pods []corev1.Pod
		want string // in the message; empty: the check holds
	}{
		"a daemon on each, within allocatable": {pods: []corev1.Pod{
			pod("log", "a", "100m", corev1.PodRunning), pod("log", "b", "100m", corev1.PodRunning), pod("web", "a", "1500m", corev1.PodRunning),
		}},
		"a node without the daemon": {pods: []corev1.Pod{pod("log", "a", "100m", corev1.PodRunning)}, want: "node b"},
		"a daemon pod not yet running": {pods: []corev1.Pod{
			pod("log", "a", "100m", corev1.PodRunning), pod("log", "b", "100m", corev1.PodPending),
		}, want: "runs no log pod"},
		"requests over allocatable": {pods: []corev1.Pod{
			pod("log", "a", "100m", corev1.PodRunning), pod("log", "b", "100m", corev1.PodRunning), pod("web", "b", "2", corev1.PodRunning),
		}, want: "allocatable 2"},
		"a finished pod does not count": {pods: []corev1.Pod{
			pod("log", "a", "100m", corev1.PodRunning), pod("log", "b", "100m", corev1.PodRunning), pod("job", "b", "2", corev1.PodSucceeded),
		}},
	} {
		t.Run(name, func(t *testing.T) {
			ok, why := DaemonOnEachAndFits(nodes, tc.pods, "log")
			if ok != (tc.want == "") || !strings.Contains(why, tc.want) {
				t.Errorf("= %v, %q; want ok %v with a message naming %q", ok, why, tc.want == "", tc.want)
			}
		})
	}
}
