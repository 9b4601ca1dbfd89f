package disruption

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

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

// withBufferPods returns the pending pods followed by the buffers' virtual
// pods, and the virtual pods' UIDs (nil without buffers).
func (s *passSimulator) withBufferPods(pending []*corev1.Pod) ([]*corev1.Pod, map[types.UID]bool) {
	if s.buffers == nil {
		return pending, nil
	}
	virtual := s.buffers.Pods()
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
