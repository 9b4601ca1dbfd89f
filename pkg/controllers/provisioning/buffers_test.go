package provisioning_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	autoscalingv1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning"
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

// TestBookedRequestsKeepTheirRoom: a booked ProvisioningRequest's pods
// that have not arrived hold their room: a pending pod that would fit the
// node beside them gets a NodeClaim instead (and, as a buffer's, the
// booked pods are not nominated); once the request's own pods exist, they
// stand for the booked ones, and the booking holds nothing more.
func TestBookedRequestsKeepTheirRoom(t *testing.T) {
	h := newHarness(t)
	bookings := buffers.NewBookings()
	h.provisioner.WithBookings(bookings)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	h.readyNode("roomy", "2", "8Gi")
	key := types.NamespacedName{Namespace: "default", Name: "batch"}
	booked := []*corev1.Pod{
		test.MakePod("batch-0-0").Requests("cpu", "1").Annotation(autoscalingv1.ConsumeAnnotationKey, "batch").Obj(),
	}
	bookings.Set(buffers.Booking{Key: key, Pods: booked})
	web := h.pendingPods(test.MakePod("web").Requests("cpu", "1500m").Obj())[0]

	res := h.schedule()

	if len(res.Created) != 1 {
		t.Fatalf("created %v, want one NodeClaim: the node's room is booked", res.Created)
	}
	if got := h.eventFor(web, "Nominated"); contains(got, "roomy") {
		t.Errorf("web was nominated to the booked node: %q", got)
	}
	for _, pod := range bookings.Pods(nil, nil) {
		if node := h.cluster.NominatedNode(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}); node != "" {
			t.Errorf("booked virtual pod %s nominated to %s", pod.Name, node)
		}
	}

	// The request's pod arrives (pending): it consumes the booking.
	h.pendingPods(test.MakePod("batch-real").Requests("cpu", "1").Annotation(autoscalingv1.ConsumeAnnotationKey, "batch").Obj())
	nodes, _ := h.cluster.ProvisioningSnapshot()
	if got := provisioning.BookedPods(h.provisioner, h.cluster.ProvisionablePods(), nodes); len(got) != 0 {
		t.Errorf("%d booked virtual pods once the request's pod exists, want 0", len(got))
	}
}

// TestBookedPodsLaunchNothing: a booking holds room that was found or
// launched; a booked pod that fits no node any more gets no new capacity.
func TestBookedPodsLaunchNothing(t *testing.T) {
	h := newHarness(t)
	bookings := buffers.NewBookings()
	h.provisioner.WithBookings(bookings)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	h.readyNode("small", "1", "4Gi")
	bookings.Set(buffers.Booking{Key: types.NamespacedName{Namespace: "default", Name: "batch"},
		Pods: []*corev1.Pod{test.MakePod("batch-0-0").Requests("cpu", "2").Annotation(autoscalingv1.ConsumeAnnotationKey, "batch").Obj()}})

	if res := h.schedule(); len(res.Created) != 0 {
		t.Errorf("created %v for a booked pod, want nothing", res.Created)
	}
}
