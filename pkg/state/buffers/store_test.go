package buffers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func buffer(name string, replicas int32, cpu string) Buffer {
	return Buffer{Key: types.NamespacedName{Namespace: "default", Name: name}, UID: types.UID(name + "-uid"), Replicas: replicas,
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}}
}

func TestStorePods(t *testing.T) {
	s := NewStore()
	if !s.Set(buffer("b", 2, "1")) || !s.Set(buffer("a", 1, "500m")) {
		t.Fatal("Set of new buffers reported no change")
	}
	if s.Set(buffer("b", 2, "1")) {
		t.Error("Set of an unchanged buffer reported a change")
	}
	if !s.Set(buffer("b", 2, "2")) {
		t.Error("Set of a new template reported no change")
	}
	pods := s.Pods()
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
		if !IsVirtual(p) {
			t.Errorf("%s is not virtual", p.Name)
		}
		key, ok := KeyOf(p)
		if !ok || key.Namespace != "default" || p.Labels["app"] != key.Name {
			t.Errorf("%s: buffer %v (%v), labels %v", p.Name, key, ok, p.Labels)
		}
	}
	if want := []string{"a-buffer-0", "b-buffer-0", "b-buffer-1"}; len(names) != 3 || names[0] != want[0] || names[1] != want[1] || names[2] != want[2] {
		t.Errorf("pods %v, want %v", names, want)
	}
	if pods[1].UID == pods[2].UID {
		t.Error("two pods of one buffer share a UID")
	}
	// Fresh objects: changing one changes neither the store nor the next call.
	pods[0].Labels["app"] = "changed"
	if s.Pods()[0].Labels["app"] != "a" {
		t.Error("Pods returned the store's own objects")
	}
	if !s.Delete(types.NamespacedName{Namespace: "default", Name: "a"}) || s.Delete(types.NamespacedName{Namespace: "default", Name: "a"}) {
		t.Error("Delete did not report whether the buffer was held")
	}
	if got := len(s.Pods()); got != 2 {
		t.Errorf("after Delete: %d pods, want 2", got)
	}
}

// TestRealPodWithTheAnnotationIsNotVirtual: a pod the API server stored
// (it has a resourceVersion) is real whatever its annotations say, so no
// pod can opt out of nominations and events by copying them.
func TestRealPodWithTheAnnotationIsNotVirtual(t *testing.T) {
	pod := VirtualPod(buffer("b", 1, "1"), 0)
	pod.ResourceVersion = "42"
	if IsVirtual(pod) {
		t.Error("a stored pod with the annotation counts as virtual")
	}
	if _, ok := KeyOf(pod); ok {
		t.Error("KeyOf names a buffer for a stored pod")
	}
}

func TestStoreRecordSignalsChanges(t *testing.T) {
	s := NewStore()
	a, b := buffer("a", 1, "1"), buffer("b", 1, "1")
	s.Set(a)
	s.Set(b)
	signalled := func() map[string]bool {
		out := map[string]bool{}
		for {
			select {
			case ev := <-s.Changes():
				out[ev.Object.Name] = true
			default:
				return out
			}
		}
	}
	s.Record(map[types.NamespacedName]Outcome{a.Key: {Existing: 1}, b.Key: {New: 1}})
	if got := signalled(); !got["a"] || !got["b"] || len(got) != 2 {
		t.Errorf("first outcomes signalled %v, want a and b", got)
	}
	s.Record(map[types.NamespacedName]Outcome{a.Key: {Existing: 1}, b.Key: {Existing: 1}})
	if got := signalled(); len(got) != 1 || !got["b"] {
		t.Errorf("b's change signalled %v, want only b", got)
	}
	if o, ok := s.Outcome(b.Key); !ok || o != (Outcome{Existing: 1}) {
		t.Errorf("Outcome(b) = %+v, %v", o, ok)
	}
	// An outcome for a buffer the store does not hold is not kept.
	gone := types.NamespacedName{Namespace: "default", Name: "gone"}
	s.Record(map[types.NamespacedName]Outcome{a.Key: {Existing: 1}, b.Key: {Existing: 1}, gone: {New: 1}})
	if _, ok := s.Outcome(gone); ok {
		t.Error("kept the outcome of an unknown buffer")
	}
	if got := signalled(); len(got) != 0 {
		t.Errorf("unchanged outcomes signalled %v", got)
	}
	// A changed buffer's outcome is forgotten until the next pass.
	s.Set(buffer("b", 2, "1"))
	if o, ok := s.Outcome(b.Key); ok {
		t.Errorf("Outcome(b) after a change = %+v, want none", o)
	}
}
