package framework

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

func TestAvailableCountsRunningReadyPodsNotBeingDeleted(t *testing.T) {
	pod := func(phase corev1.PodPhase, ready corev1.ConditionStatus, deleting bool) corev1.Pod {
		p := corev1.Pod{Status: corev1.PodStatus{Phase: phase,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	pods := []corev1.Pod{
		pod(corev1.PodRunning, corev1.ConditionTrue, false),  // available
		pod(corev1.PodRunning, corev1.ConditionFalse, false), // not ready (node not ready)
		pod(corev1.PodRunning, corev1.ConditionTrue, true),   // being drained
		pod(corev1.PodPending, corev1.ConditionTrue, false),  // not running
		{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, // no Ready condition
	}
	if got := CountAvailable(pods); got != 1 {
		t.Errorf("CountAvailable = %d, want 1", got)
	}
}

func TestSpreadOverHostsKeepsTheAppsPodsApart(t *testing.T) {
	d := SpreadOverHosts(Deployment("web", "ns", "pool", 3, "500m"))
	terms := d.Spec.Template.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if len(terms) != 1 || terms[0].TopologyKey != corev1.LabelHostname || terms[0].LabelSelector.MatchLabels["app"] != "web" {
		t.Errorf("anti-affinity terms %+v, want one on %s for app=web", terms, corev1.LabelHostname)
	}
	if got := d.Spec.Template.Spec.NodeSelector[karpv1.NodePoolLabelKey]; got != "pool" {
		t.Errorf("node selector pool %q, want pool", got)
	}
	if d.Spec.Template.Labels["app"] != "web" || *d.Spec.Replicas != 3 || d.Namespace != "ns" {
		t.Errorf("deployment %s/%s labels %v replicas %d", d.Namespace, d.Name, d.Spec.Template.Labels, *d.Spec.Replicas)
	}
}
