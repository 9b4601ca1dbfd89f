package disruption_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/state/buffers"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestEmptyNodeHoldingBufferRoomStays: of two empty nodes, the one a
// CapacityBuffer's virtual pod needs stays (it is not empty for
// disruption), the other goes; once the buffer is gone, the second goes
// too.
func TestEmptyNodeHoldingBufferRoomStays(t *testing.T) {
	h := newHarness(t)
	store := buffers.NewStore()
	h.controller.WithBuffers(store)
	key := types.NamespacedName{Namespace: "default", Name: "warm"}
	h.expectHeldRoomKeepsOneEmptyNode("the buffer", func() {
		store.Set(buffers.Buffer{Key: key, UID: "warm-uid", Replicas: 1, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "pause", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}}}}}}})
	}, func() { store.Delete(key) })
}

// TestEmptyNodeHoldingBookedRoomStays: as a buffer's, a booked
// ProvisioningRequest's pod that has not arrived keeps one of two empty
// nodes; once the booking goes, that node goes too.
func TestEmptyNodeHoldingBookedRoomStays(t *testing.T) {
	h := newHarness(t)
	bookings := buffers.NewBookings()
	h.controller.WithBookings(bookings)
	key := types.NamespacedName{Namespace: "default", Name: "batch"}
	h.expectHeldRoomKeepsOneEmptyNode("the booking", func() {
		bookings.Set(buffers.Booking{Key: key, Pods: []*corev1.Pod{test.MakePod("batch-0-0").Requests("cpu", "1500m").Obj()}})
	}, func() { bookings.Delete(key) })
}

// expectHeldRoomKeepsOneEmptyNode runs two empty nodes through disruption
// while hold keeps room for one 1.5-cpu pod: one node goes, the other
// stays; after release both go.
func (h *harness) expectHeldRoomKeepsOneEmptyNode(what string, hold, release func()) {
	h.t.Helper()
	h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "100%"}).Obj())
	h.runningNode("empty-a", nodeOpts{it: smallType})
	h.runningNode("empty-b", nodeOpts{it: smallType})
	hold()

	h.decide()
	gone := 0
	for _, n := range []string{"empty-a", "empty-b"} {
		if h.gone(n) {
			gone++
		}
	}
	if gone != 1 {
		h.t.Fatalf("%d empty nodes deleted, want 1 (the other holds the room of %s)", gone, what)
	}

	release()
	h.decide()
	for _, n := range []string{"empty-a", "empty-b"} {
		if !h.gone(n) {
			h.t.Errorf("node %s stays after %s went", n, what)
		}
	}
}

// TestDriftReplacesANodeHoldingBufferRoom: a buffer's room does not keep a
// drifted node: the node is replaced by one that holds the room, then
// deleted (upstream Karpenter's regression spec "should allow drift to
// replace buffer nodes").
func TestDriftReplacesANodeHoldingBufferRoom(t *testing.T) {
	h := newHarness(t)
	store := buffers.NewStore()
	h.controller.WithBuffers(store)
	h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "100%"}).Obj())
	h.runningNode("drifted", nodeOpts{it: smallType, conditions: []string{karpv1.ConditionTypeDrifted}})
	store.Set(buffers.Buffer{Key: types.NamespacedName{Namespace: "default", Name: "warm"}, UID: "warm-uid", Replicas: 1,
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pause",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}}}}}}})

	if !h.pass() {
		t.Fatalf("drift did not act on a node holding buffer room (DisruptionBlocked = %+v)", h.blocked("drifted"))
	}
	repl := h.replacements("drifted")
	if len(repl) != 1 || !h.tainted("drifted") {
		t.Fatalf("%d replacements, drifted node tainted: %v; want one replacement for the room, the node tainted", len(repl), h.tainted("drifted"))
	}
	h.initialize(&repl[0], smallType)
	h.pass()
	if !h.gone("drifted") {
		t.Error("drifted node not deleted once its replacement initialized")
	}
}
