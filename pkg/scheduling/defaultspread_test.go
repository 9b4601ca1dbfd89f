package scheduling

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func service(ns string, selector map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: ns}, Spec: corev1.ServiceSpec{Selector: selector}}
}

func labelledPod(ns string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns, Labels: lbls}}
}

func TestDefaultSpreadSelector(t *testing.T) {
	web := map[string]string{"app": "web", "pod-template-hash": "abc", "statefulset.kubernetes.io/pod-name": "web-0"}
	in := func(k, v string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{v}}
	}
	tests := map[string]struct {
		pod      *corev1.Pod
		services []*corev1.Service
		owner    *metav1.LabelSelector
		want     *metav1.LabelSelector
	}{
		"nothing selects the pod: no selector, no defaults": {
			pod: labelledPod("default", web), want: nil,
		},
		"a Service selecting the pod gives its selector": {
			pod: labelledPod("default", web), services: []*corev1.Service{service("default", map[string]string{"app": "web"})},
			want: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
		"Services selecting other pods or in other namespaces give nothing": {
			pod: labelledPod("default", web),
			services: []*corev1.Service{service("default", map[string]string{"app": "db"}),
				service("other", map[string]string{"app": "web"})},
			want: nil,
		},
		"a Service without a selector selects nothing": {
			pod: labelledPod("default", web), services: []*corev1.Service{service("default", nil)}, want: nil,
		},
		"a Service with an empty selector selects the pod but adds no label": {
			pod: labelledPod("default", web), services: []*corev1.Service{service("default", map[string]string{})}, want: nil,
		},
		"several Services merge": {
			pod: labelledPod("default", web),
			services: []*corev1.Service{service("default", map[string]string{"app": "web"}),
				service("default", map[string]string{"pod-template-hash": "abc"})},
			want: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "pod-template-hash": "abc"}},
		},
		"the owner's selector, not the pod's labels (no per-pod StatefulSet label)": {
			pod:   labelledPod("default", web),
			owner: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "pod-template-hash": "abc"}},
			want: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				in("app", "web"), in("pod-template-hash", "abc")}},
		},
		"the owner's expressions are kept and ANDed to the Services'": {
			pod:      labelledPod("default", web),
			services: []*corev1.Service{service("default", map[string]string{"app": "web"})},
			owner: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: metav1.LabelSelectorOpExists}}},
			want: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}, MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: metav1.LabelSelectorOpExists}}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := DefaultSpreadSelector(tc.pod, tc.services, tc.owner)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("selector (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestSpreadDefaultsFor(t *testing.T) {
	zone := []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule}}
	host := []corev1.TopologySpreadConstraint{{MaxSkew: 2, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule}}
	own := labelledPod("default", nil)
	own.Spec.TopologySpreadConstraints = host
	named := func(scheduler string) *corev1.Pod {
		p := labelledPod("default", nil)
		p.Spec.SchedulerName = scheduler
		return p
	}
	tests := map[string]struct {
		defaults SpreadDefaults
		pod      *corev1.Pod
		want     []corev1.TopologySpreadConstraint
	}{
		"no defaults": {pod: named(""), want: nil},
		"a pod without schedulerName uses the default": {defaults: SpreadDefaults{DefaultSchedulerName: zone}, pod: named(""), want: zone},
		"a pod naming the default scheduler":           {defaults: SpreadDefaults{DefaultSchedulerName: zone}, pod: named(DefaultSchedulerName), want: zone},
		"a pod naming another profile uses that one": {
			defaults: SpreadDefaults{DefaultSchedulerName: zone, "batch": host}, pod: named("batch"), want: host,
		},
		"a pod naming a scheduler with no profile gets nothing": {
			defaults: SpreadDefaults{DefaultSchedulerName: zone}, pod: named("custom"), want: nil,
		},
		"defaults for any scheduler": {defaults: SpreadDefaults{AnyScheduler: zone}, pod: named("custom"), want: zone},
		"a pod with constraints of its own gets none": {
			defaults: SpreadDefaults{DefaultSchedulerName: zone}, pod: own, want: nil,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.defaults.For(tc.pod)); diff != "" {
				t.Errorf("constraints (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestDefaultSpreadConstraints(t *testing.T) {
	defaults := []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway}}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	got := DefaultSpreadConstraints(defaults, sel)
	want := []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: sel}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("constraints (-want,+got):\n%s", diff)
	}
	if defaults[0].LabelSelector != nil {
		t.Error("the configured defaults were changed; each pod must get its own copy")
	}
	if got := DefaultSpreadConstraints(defaults, nil); got != nil {
		t.Errorf("no selector deduced: got %v, want no constraints", got)
	}
}
