package provisioning

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/state/buffers"
)

// CapacityBuffers (CapacityBuffer feature gate): the provisioner places
// each buffer's virtual pods with the pending pods, after them
// (simulation.Input.Headroom), so nodes are launched for the room they
// need; they are never nominated, hinted or given events, and do not count
// as pods in the pass's metrics. Where the pass placed them is recorded
// for the buffers' Provisioning condition.

// WithBuffers makes the provisioner keep room for the buffers in store.
func (p *Provisioner) WithBuffers(store *buffers.Store) *Provisioner {
	p.buffers = store
	return p
}

// WithBookings makes the provisioner keep room for the pods of the
// booked ProvisioningRequests that have not arrived yet (ProvisioningRequest
// feature gate): their virtual pods are placed as a buffer's are.
func (p *Provisioner) WithBookings(bookings *buffers.Bookings) *Provisioner {
	p.bookings = bookings
	return p
}

// bookedPods are the booked requests' virtual pods, less the real pods
// already consuming each request (pending or on a node).
func (p *Provisioner) bookedPods(pending []*corev1.Pod, nodes []*simulation.Node) []*corev1.Pod {
	if p.bookings == nil {
		return nil
	}
	return p.bookings.Pods(buffers.Consumed(pending, nodes), nil)
}

// reserveBooked places the booked requests' virtual pods among in.Pods on
// the nodes where they fit, before any other pod (buffers.Reserve: they
// become bound there), and returns in.Pods without them. A booking holds
// room that was found or launched; the provisioner never launches for it,
// so booked pods that fit no node any more hold nothing (as a
// check-capacity request never scales up).
func reserveBooked(ctx context.Context, in *simulation.Input) []*corev1.Pod {
	var rest, booked []*corev1.Pod
	for _, pod := range in.Pods {
		if buffers.IsBooked(pod) {
			booked = append(booked, pod)
		} else {
			rest = append(rest, pod)
		}
	}
	if len(booked) == 0 {
		return in.Pods
	}
	buffers.Reserve(ctx, *in, booked)
	return rest
}

// bufferPods are the buffers' virtual pods (none without a store).
func (p *Provisioner) bufferPods() []*corev1.Pod {
	if p.buffers == nil {
		return nil
	}
	return p.buffers.Pods()
}

// headroom marks the virtual pods among pods; nil when there are none.
func headroom(pods []*corev1.Pod) map[types.UID]bool {
	var out map[types.UID]bool
	for _, pod := range pods {
		if buffers.IsVirtual(pod) {
			if out == nil {
				out = map[types.UID]bool{}
			}
			out[pod.UID] = true
		}
	}
	return out
}

// realPods are the pods that are not virtual.
func realPods(pods []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(pods))
	for _, pod := range pods {
		if !buffers.IsVirtual(pod) {
			out = append(out, pod)
		}
	}
	return out
}

// withRealPods returns copies of the NodeClaims holding only their real
// pods, for decisions about the pods the scheduler will place.
func withRealPods(claims []*simulation.NodeClaim) []*simulation.NodeClaim {
	out := make([]*simulation.NodeClaim, len(claims))
	for i, nc := range claims {
		cp := *nc
		cp.Pods = realPods(nc.Pods)
		out[i] = &cp
	}
	return out
}

// recordBuffers tells the store where the pass placed each buffer's pods.
func (p *Provisioner) recordBuffers(res *simulation.Result) {
	if p.buffers == nil {
		return
	}
	p.buffers.Record(bufferOutcomes(res))
}

// bufferOutcomes counts, per buffer, its pods placed on nodes that exist
// or are launching, on new NodeClaims, and nowhere.
func bufferOutcomes(res *simulation.Result) map[types.NamespacedName]buffers.Outcome {
	out := map[types.NamespacedName]buffers.Outcome{}
	count := func(pod *corev1.Pod, add func(*buffers.Outcome)) {
		if key, ok := buffers.KeyOf(pod); ok {
			o := out[key]
			add(&o)
			out[key] = o
		}
	}
	for _, ep := range res.ExistingNodes {
		for _, pod := range ep.Pods {
			count(pod, func(o *buffers.Outcome) { o.Existing++ })
		}
	}
	for _, nc := range res.NodeClaims {
		for _, pod := range nc.Pods {
			count(pod, func(o *buffers.Outcome) { o.New++ })
		}
	}
	for _, pe := range res.PodErrors {
		count(pe.Pod, func(o *buffers.Outcome) { o.Unplaced++ })
	}
	return out
}
