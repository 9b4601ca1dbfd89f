package disruption

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/state/buffers"
)

// CapacityBuffers (CapacityBuffer feature gate): the simulator places each
// buffer's virtual pods with the pending pods, before a consolidation's
// candidates' pods (and after the real pending pods), so a node holding a
// buffer's room is not empty, and no consolidation takes the room.

// WithBuffers makes consolidation and emptiness keep room for the buffers
// in store.
func (c *Controller) WithBuffers(store *buffers.Store) *Controller {
	c.simulator.buffers = store
	return c
}

// WithBookings makes consolidation and emptiness keep room for the booked
// ProvisioningRequests' pods that have not arrived yet.
func (c *Controller) WithBookings(bookings *buffers.Bookings) *Controller {
	c.simulator.bookings = bookings
	return c
}

// withBufferPods returns the pending pods followed by the buffers' and the
// booked requests' virtual pods (less the real pods already consuming each
// request, pending or on nodes), and the virtual pods' UIDs (nil without
// any).
func (s *passSimulator) withBufferPods(pending []*corev1.Pod, nodes []*simulation.Node) ([]*corev1.Pod, map[types.UID]bool) {
	var virtual []*corev1.Pod
	if s.buffers != nil {
		virtual = s.buffers.Pods()
	}
	if s.bookings != nil {
		virtual = append(virtual, s.bookings.Pods(buffers.Consumed(pending, nodes), nil)...)
	}
	if len(virtual) == 0 {
		return pending, nil
	}
	headroom := make(map[types.UID]bool, len(virtual))
	for _, pod := range virtual {
		headroom[pod.UID] = true
	}
	return append(slices.Clip(pending), virtual...), headroom
}

// headroomKey fingerprints the buffers' virtual pods of the pass, for the
// consolidation memo: a buffer that grows, shrinks or goes changes what a
// search may find.
func (s *passSimulator) headroomKey() string {
	uids := make([]string, 0, len(s.in.Headroom))
	for uid := range s.in.Headroom {
		uids = append(uids, string(uid))
	}
	slices.Sort(uids)
	return "|" + strings.Join(uids, ",")
}
