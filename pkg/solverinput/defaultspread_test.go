package solverinput_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/solverinput"
)

const ns = "default"

var zone = corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule}

func template(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
}

func create(t *testing.T, obj client.Object) client.Object {
	t.Helper()
	if err := env.Client.Create(t.Context(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.WithoutCancel(t.Context()), obj) })
	return obj
}

func pod(name string, labels map[string]string, owner client.Object, kind, apiVersion string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name), Labels: labels}}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true)}}
	}
	return p
}

// TestGather reads, from a real API server, the owners and Services
// kube-scheduler deduces default selectors from.
func TestGather(t *testing.T) {
	dbLabels := map[string]string{"app": "db", "statefulset.kubernetes.io/pod-name": "db-0"}
	sts := create(t, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "ds-db", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"db"}}}},
			Template: template(map[string]string{"app": "db"})}})
	legacy := map[string]string{"app": "legacy"}
	rc := create(t, &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "ds-legacy", Namespace: ns},
		Spec: corev1.ReplicationControllerSpec{Selector: legacy, Template: ptr.To(template(legacy))}})
	create(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ds-web", Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}})
	goneRS := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "ds-gone", UID: "uid-gone"}}
	job := &metav1.ObjectMeta{Name: "ds-job", UID: "uid-job"}

	own := pod("own", map[string]string{"app": "web"}, nil, "", "")
	own.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 2, TopologyKey: corev1.LabelHostname,
		WhenUnsatisfiable: corev1.DoNotSchedule}}
	other := pod("other-scheduler", map[string]string{"app": "db"}, sts, "StatefulSet", "apps/v1")
	other.Spec.SchedulerName = "batch"
	jobPod := pod("job", map[string]string{"app": "batch"}, nil, "", "")
	jobPod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true)}}
	pods := []*corev1.Pod{
		pod("db-0", dbLabels, sts, "StatefulSet", "apps/v1"),
		pod("legacy-x", legacy, rc, "ReplicationController", "v1"),
		pod("web-x", map[string]string{"app": "web", "pod-template-hash": "1"}, goneRS, "ReplicaSet", "apps/v1"),
		pod("web-y", map[string]string{"app": "web", "pod-template-hash": "1"}, goneRS, "ReplicaSet", "apps/v1"),
		// Same labels, another owner: deduced on its own.
		pod("db-1", map[string]string{"app": "db", "statefulset.kubernetes.io/pod-name": "db-0"}, rc, "ReplicationController", "v1"),
		jobPod, own, other,
	}
	got := solverinput.DefaultSpread(t.Context(), env.Client, scheduling.SpreadDefaults{scheduling.DefaultSchedulerName: {zone}}, pods)

	with := func(sel *metav1.LabelSelector) []corev1.TopologySpreadConstraint {
		c := zone
		c.LabelSelector = sel
		return []corev1.TopologySpreadConstraint{c}
	}
	want := map[types.UID][]corev1.TopologySpreadConstraint{
		// The StatefulSet's selector, not the pod's per-pod name label.
		"uid-db-0": with(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"db"}}}}),
		"uid-legacy-x": with(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"legacy"}}}}),
		// Its ReplicaSet is gone: the Service alone gives the selector.
		"uid-web-x": with(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}),
		"uid-web-y": with(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}),
		"uid-db-1": with(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"legacy"}}}}),
		// A Job's pod no Service selects, a pod with its own spread and a
		// pod of a scheduler without defaults get none.
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("default constraints by pod (-want,+got):\n%s", diff)
	}
}

// TestGatherWithoutDefaultsReadsNothing: no defaults, no lookups (a nil
// client would panic on any).
func TestGatherWithoutDefaultsReadsNothing(t *testing.T) {
	if got := solverinput.DefaultSpread(t.Context(), nil, nil, []*corev1.Pod{pod("p", map[string]string{"app": "web"}, nil, "", "")}); got != nil {
		t.Errorf("got %v, want nothing", got)
	}
}
