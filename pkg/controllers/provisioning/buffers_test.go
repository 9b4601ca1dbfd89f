package provisioning_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	autoscalingv1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
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

// bufferHarness is a harness whose provisioner gives room to the returned
// store's buffers, with the NodePool default ready (pool, when given,
// instead).
func bufferHarness(t *testing.T, pool ...*karpv1.NodePool) (*harness, *buffers.Store) {
	t.Helper()
	h := newHarness(t)
	store := buffers.NewStore()
	h.provisioner.WithBuffers(store)
	if len(pool) == 0 {
		pool = append(pool, test.MakeNodePool("default").Obj())
	}
	h.readyNodePool(pool[0])
	return h, store
}

// expectOutcome checks the store's last outcome for buffer b; what names
// the pass for the message.
func expectOutcome(t *testing.T, store *buffers.Store, b buffers.Buffer, want buffers.Outcome, what string) {
	t.Helper()
	if o, ok := store.Outcome(b.Key); !ok || o != want {
		t.Errorf("%soutcome of %s = %+v (recorded %v), want %+v", what, b.Key.Name, o, ok, want)
	}
}

// TestBufferPodsLaunchCapacityButAreNotNominated: a buffer's virtual pods
// get a NodeClaim like pending pods, but no nomination; the next pass
// finds them room on that launching NodeClaim instead of launching again,
// and the store records where each pass put them.
func TestBufferPodsLaunchCapacityButAreNotNominated(t *testing.T) {
	h, store := bufferHarness(t)
	b := bufferOf("warm", 2, "1")
	store.Set(b)

	first := h.schedule()
	if len(first.Created) != 1 || len(h.nodeClaims()) != 1 {
		t.Fatalf("first pass created %v, want one NodeClaim for the buffer's two pods", first.Created)
	}
	expectOutcome(t, store, b, buffers.Outcome{New: 2}, "first ")
	for _, pod := range store.Pods() {
		if node := h.cluster.NominatedNode(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}); node != "" {
			t.Errorf("virtual pod %s nominated to %s", pod.Name, node)
		}
	}

	second := h.schedule()
	if len(second.Created) != 0 {
		t.Errorf("second pass created %v; the buffer's room is launching already", second.Created)
	}
	expectOutcome(t, store, b, buffers.Outcome{Existing: 2}, "second ")
}

// TestRealPodsBeforeBufferPods: a node with room for one of two pods gives
// it to the real pending pod, though the buffer's pod is larger (the
// solver's usual order would place it first); the buffer's pod gets new
// capacity.
func TestRealPodsBeforeBufferPods(t *testing.T) {
	h, store := bufferHarness(t)
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
	expectOutcome(t, store, b, buffers.Outcome{New: 1}, "")
}

// TestBufferPodsThatFitNowhereAreQuiet: a buffer pod no NodePool can hold
// is recorded as unplaced, and the pass neither fails nor creates
// anything for it.
func TestBufferPodsThatFitNowhereAreQuiet(t *testing.T) {
	h, store := bufferHarness(t)
	b := bufferOf("huge", 1, "1000")
	store.Set(b)

	res := h.schedule()

	if len(res.Created) != 0 {
		t.Errorf("created %v for a pod that fits no instance type", res.Created)
	}
	expectOutcome(t, store, b, buffers.Outcome{Unplaced: 1}, "")
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

// The tests below follow upstream Karpenter's CapacityBuffer regression
// specs where the provisioner decides (docs/upstream-regression-coverage.md).

// runningOn creates the pod running on the node and waits until the state
// counts it there.
func (h *harness) runningOn(pod *corev1.Pod, node string) *corev1.Pod {
	h.t.Helper()
	pod.Spec.NodeName = node
	h.create(pod)
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &metav1.Time{Time: h.clock.Now()}
	if err := h.client.Status().Update(h.ctx, pod); err != nil {
		h.t.Fatalf("starting pod %s: %v", pod.Name, err)
	}
	h.eventually("pod "+pod.Name+" on "+node+" in state", func() bool {
		for _, sn := range h.cluster.Nodes() {
			if sn.Node == nil || sn.Node.Name != node {
				continue
			}
			for _, p := range sn.Pods {
				if p.Name == pod.Name && p.Status.Phase == corev1.PodRunning {
					return true
				}
			}
		}
		return false
	})
	return pod
}

// spreadBuffer is a buffer of replicas 1-cpu pods labelled app=name that
// may not share a node with each other (required anti-affinity on the
// hostname), as a workload spread over hosts.
func spreadBuffer(name string, replicas int32) buffers.Buffer {
	b := bufferOf(name, replicas, "1")
	b.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}}}}
	return b
}

// TestBufferRoomStopsAtTheNodePoolLimit: a buffer of ten 1-cpu pods in a
// NodePool limited to 4 cpu gets two 2-cpu NodeClaims and no more, pass
// after pass; the pods left over are reported as fitting nowhere.
func TestBufferRoomStopsAtTheNodePoolLimit(t *testing.T) {
	h := newHarness(t)
	limitTypes(h)
	store := buffers.NewStore()
	h.provisioner.WithBuffers(store)
	h.readyNodePool(test.MakeNodePool("default").Limits(test.ResourceList("cpu", "4")).Obj())
	b := bufferOf("big", 10, "1")
	store.Set(b)

	h.schedule()
	h.schedule()
	if n := len(h.nodeClaims()); n != 2 {
		t.Errorf("%d NodeClaims after two passes, want 2 (4 cpu of 2-cpu nodes)", n)
	}
	if cpu := worstCaseCPU(t, h); cpu > 4 {
		t.Errorf("the NodeClaims may launch %d cpu, over the limit of 4", cpu)
	}
	if o, ok := store.Outcome(b.Key); !ok || o.Existing != 4 || o.Unplaced != 6 {
		t.Errorf("outcome = %+v (%v), want 4 pods on the launching NodeClaims and 6 unplaced", o, ok)
	}
}

// TestBuffersGetRoomIndependently: two buffers of different shapes each
// get room, and each is told where its own pods went.
func TestBuffersGetRoomIndependently(t *testing.T) {
	h, store := bufferHarness(t)
	a, b := bufferOf("big", 2, "1"), bufferOf("small", 3, "500m")
	store.Set(a)
	store.Set(b)

	if res := h.schedule(); len(res.Created) == 0 {
		t.Fatal("no NodeClaim for two buffers")
	}
	expectOutcome(t, store, a, buffers.Outcome{New: 2}, "first ")
	expectOutcome(t, store, b, buffers.Outcome{New: 3}, "first ")
	if res := h.schedule(); len(res.Created) != 0 {
		t.Errorf("second pass created %v; both buffers have room launching", res.Created)
	}
	expectOutcome(t, store, a, buffers.Outcome{Existing: 2}, "second ")
	expectOutcome(t, store, b, buffers.Outcome{Existing: 3}, "second ")
}

// TestBufferPodFitsBesideARealPod: a node running a small real pod has
// room left for the buffer's pod: nothing is launched.
func TestBufferPodFitsBesideARealPod(t *testing.T) {
	h, store := bufferHarness(t)
	h.readyNode("shared", "2", "8Gi")
	h.runningOn(test.MakePod("real").Requests("cpu", "100m", "memory", "128Mi").Obj(), "shared")
	b := bufferOf("warm", 1, "1")
	store.Set(b)

	if res := h.schedule(); len(res.Created) != 0 {
		t.Errorf("created %v; the buffer's pod fits beside the real one", res.Created)
	}
	expectOutcome(t, store, b, buffers.Outcome{Existing: 1}, "")
}

// TestBufferPodsKeepTheirTemplatesNodeSelector: a buffer whose template
// selects arm64 nodes gets an arm64 NodeClaim.
func TestBufferPodsKeepTheirTemplatesNodeSelector(t *testing.T) {
	h, store := bufferHarness(t)
	b := bufferOf("arm", 1, "1")
	b.Template.Spec.NodeSelector = map[string]string{corev1.LabelArchStable: "arm64"}
	store.Set(b)

	if res := h.schedule(); len(res.Created) != 1 {
		t.Fatalf("created %v, want one NodeClaim", res.Created)
	}
	arch := requirement(h.nodeClaims()[0], corev1.LabelArchStable)
	if arch == nil || arch.Operator != corev1.NodeSelectorOpIn || len(arch.Values) != 1 || arch.Values[0] != "arm64" {
		t.Errorf("arch requirement %+v, want In [arm64]", arch)
	}
}

// TestBufferPodsKeepTheirAntiAffinity: a buffer's pods that may not share a
// node get a node each, and do not go beside a real pod of their workload,
// however much room its node has.
func TestBufferPodsKeepTheirAntiAffinity(t *testing.T) {
	for name, withWorkload := range map[string]bool{"alone": false, "beside the workload's pod": true} {
		t.Run(name, func(t *testing.T) {
			h, store := bufferHarness(t)
			b := spreadBuffer("spread", 3)
			if withWorkload {
				h.readyNode("roomy", "16", "64Gi")
				real := test.MakePod("spread-real").Labels(map[string]string{"app": "spread"}).Requests("cpu", "1").Obj()
				real.Spec.Affinity = b.Template.Spec.Affinity.DeepCopy()
				h.runningOn(real, "roomy")
			}
			store.Set(b)

			res := h.schedule()
			if len(res.Created) != 3 {
				t.Errorf("created %d NodeClaims, want 3: one per buffer pod", len(res.Created))
			}
			expectOutcome(t, store, b, buffers.Outcome{New: 3}, "")
		})
	}
}

// TestBufferRoomOnALeavingNodeIsLaunchedAgain: when the node holding a
// buffer's room is being deleted (expired, drifted, deleted by hand), the
// next pass launches the room again.
func TestBufferRoomOnALeavingNodeIsLaunchedAgain(t *testing.T) {
	h, store := bufferHarness(t)
	b := bufferOf("warm", 1, "1")
	store.Set(b)

	first := h.schedule()
	if len(first.Created) != 1 {
		t.Fatalf("created %v, want one NodeClaim", first.Created)
	}
	if second := h.schedule(); len(second.Created) != 0 {
		t.Fatalf("second pass created %v; the room is launching", second.Created)
	}
	nc := &karpv1.NodeClaim{}
	if err := h.client.Get(h.ctx, clientKey(first.Created[0]), nc); err != nil {
		t.Fatal(err)
	}
	// The termination finalizer keeps it, being deleted, as a draining node.
	if err := h.client.Delete(h.ctx, nc); err != nil {
		t.Fatal(err)
	}
	h.eventually("the NodeClaim leaving in state", func() bool {
		for _, sn := range h.cluster.Nodes() {
			if sn.NodeClaim != nil && sn.NodeClaim.Name == nc.Name {
				return !sn.NodeClaim.DeletionTimestamp.IsZero()
			}
		}
		return false
	})

	third := h.schedule()
	if len(third.Created) != 1 || third.Created[0] == nc.Name {
		t.Errorf("third pass created %v, want a new NodeClaim for the buffer's room", third.Created)
	}
	expectOutcome(t, store, b, buffers.Outcome{New: 1}, "")
}
