package provisioning_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karp-autoscaler/karp/pkg/state/buffers"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// bufferOf is a resolved buffer of replicas pods asking for cpu each.
func bufferOf(name string, replicas int32, cpu string) buffers.Buffer {
	return buffers.Buffer{Key: types.NamespacedName{Namespace: "default", Name: name}, UID: types.UID(name + "-uid"), Replicas: replicas,
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pause", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}}
}

// TestBufferPodsLaunchCapacityButAreNotNominated: a buffer's virtual pods
// get a NodeClaim like pending pods, but no nomination; the next pass
// finds them room on that launching NodeClaim instead of launching again,
// and the store records where each pass put them.
func TestBufferPodsLaunchCapacityButAreNotNominated(t *testing.T) {
	h := newHarness(t)
	store := buffers.NewStore()
	h.provisioner.WithBuffers(store)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	b := bufferOf("warm", 2, "1")
	store.Set(b)

	first := h.schedule()
	if len(first.Created) != 1 || len(h.nodeClaims()) != 1 {
		t.Fatalf("first pass created %v, want one NodeClaim for the buffer's two pods", first.Created)
	}
	if o, ok := store.Outcome(b.Key); !ok || o != (buffers.Outcome{New: 2}) {
		t.Errorf("first outcome = %+v (%v), want both pods on new capacity", o, ok)
	}
	for _, pod := range store.Pods() {
		if node := h.cluster.NominatedNode(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}); node != "" {
			t.Errorf("virtual pod %s nominated to %s", pod.Name, node)
		}
	}

	second := h.schedule()
	if len(second.Created) != 0 {
		t.Errorf("second pass created %v; the buffer's room is launching already", second.Created)
	}
	if o, ok := store.Outcome(b.Key); !ok || o != (buffers.Outcome{Existing: 2}) {
		t.Errorf("second outcome = %+v (%v), want both pods on the launching NodeClaim", o, ok)
	}
}

// TestRealPodsBeforeBufferPods: a node with room for one of two pods gives
// it to the real pending pod, though the buffer's pod is larger (the
// solver's usual order would place it first); the buffer's pod gets new
// capacity.
func TestRealPodsBeforeBufferPods(t *testing.T) {
	h := newHarness(t)
	store := buffers.NewStore()
	h.provisioner.WithBuffers(store)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	h.readyNode("roomy", "2", "8Gi")
	b := bufferOf("warm", 1, "1500m")
	store.Set(b)
	real := h.pendingPods(test.MakePod("web").Requests("cpu", "1").Obj())[0]

	res := h.schedule()

	if got := h.eventFor(real, "Nominated"); !contains(got, "roomy") {
		t.Errorf("real pod's Nominated event %q does not name node roomy", got)
	}
	if len(res.Created) != 1 {
		t.Errorf("created %v, want one NodeClaim for the buffer's pod", res.Created)
	}
	if o, ok := store.Outcome(b.Key); !ok || o != (buffers.Outcome{New: 1}) {
		t.Errorf("outcome = %+v (%v), want the buffer's pod on new capacity", o, ok)
	}
}

// TestBufferPodsThatFitNowhereAreQuiet: a buffer pod no NodePool can hold
// is recorded as unplaced, and the pass neither fails nor creates
// anything for it.
func TestBufferPodsThatFitNowhereAreQuiet(t *testing.T) {
	h := newHarness(t)
	store := buffers.NewStore()
	h.provisioner.WithBuffers(store)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	b := bufferOf("huge", 1, "1000")
	store.Set(b)

	res := h.schedule()

	if len(res.Created) != 0 {
		t.Errorf("created %v for a pod that fits no instance type", res.Created)
	}
	if o, ok := store.Outcome(b.Key); !ok || o != (buffers.Outcome{Unplaced: 1}) {
		t.Errorf("outcome = %+v (%v), want the pod unplaced", o, ok)
	}
}
