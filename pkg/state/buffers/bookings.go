package buffers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	autoscalingv1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1"
	autoscalingv1beta1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1beta1"
	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// AnnotationBooking marks a booked ProvisioningRequest's virtual pod with
// the request's namespace/name.
const AnnotationBooking = "karpenter.sh/provisioning-request-booking"

// Booking is the capacity a Provisioned ProvisioningRequest holds for its
// pods during its booking period, as Cluster Autoscaler books it: until
// the pods that consume the request arrive, their room is not free.
type Booking struct {
	Key types.NamespacedName
	// Pods are the request's pods as its solve placed them.
	Pods []*corev1.Pod
	// OnNodeClaims is set when the request launched NodeClaims of its own
	// for the pods (best-effort-atomic-scale-up), which hold the room
	// themselves in other requests' solves.
	OnNodeClaims bool
}

// Bookings are the ProvisioningRequests whose capacity karp holds: the
// provisioningrequest controller sets and removes them; the provisioner
// and disruption keep room for their pods that have not arrived (virtual
// pods placed as a CapacityBuffer's are), so pending pods do not count on
// that room and no consolidation takes it. It is safe for concurrent use.
type Bookings struct {
	mu sync.RWMutex
	m  map[types.NamespacedName]Booking
}

// NewBookings returns an empty set of bookings.
func NewBookings() *Bookings {
	return &Bookings{m: map[types.NamespacedName]Booking{}}
}

// Set records the booking, replacing the request's previous one.
func (b *Bookings) Set(bk Booking) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.m[bk.Key] = bk
}

// Delete lets the request's booking go; it reports whether there was one.
func (b *Bookings) Delete(key types.NamespacedName) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.m[key]
	delete(b.m, key)
	return ok
}

// Has reports whether the request holds a booking.
func (b *Bookings) Has(key types.NamespacedName) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	_, ok := b.m[key]
	return ok
}

// Pods returns the virtual pods of the bookings keep selects (nil: all),
// in a stable order: for a request of n pods of which consumed[request]
// real pods exist, its last n - consumed pods.
func (b *Bookings) Pods(consumed map[types.NamespacedName]int, keep func(Booking) bool) []*corev1.Pod {
	if b == nil {
		return nil
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	keys := make([]types.NamespacedName, 0, len(b.m))
	for key := range b.m {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(x, y types.NamespacedName) int { return strings.Compare(x.String(), y.String()) })
	var out []*corev1.Pod
	for _, key := range keys {
		bk := b.m[key]
		if keep != nil && !keep(bk) {
			continue
		}
		for _, pod := range bk.Pods[min(consumed[key], len(bk.Pods)):] {
			out = append(out, bookedPod(key, pod))
		}
	}
	return out
}

// bookedPod is a virtual copy of a booked request's pod: never created
// (IsVirtual), pending, unbound.
func bookedPod(key types.NamespacedName, pod *corev1.Pod) *corev1.Pod {
	annotations := make(map[string]string, len(pod.Annotations)+2)
	for k, v := range pod.Annotations {
		annotations[k] = v
	}
	annotations[autoscalingv1beta1.AnnotationVirtualPod] = "true"
	annotations[AnnotationBooking] = key.String()
	spec := *pod.Spec.DeepCopy()
	spec.NodeName = ""
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name + "-booked", Namespace: key.Namespace,
			UID: types.UID(fmt.Sprintf("%s-booked", pod.UID)), Labels: pod.Labels, Annotations: annotations},
		Spec:   spec,
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

// IsBooked reports whether the pod is a booked request's virtual pod.
func IsBooked(pod *corev1.Pod) bool {
	return IsVirtual(pod) && pod.Annotations[AnnotationBooking] != ""
}

// Consumed counts, by request, the real pods that consume a
// ProvisioningRequest (its consume annotation) and have not finished,
// among the pending pods and the pods of nodes.
func Consumed(pending []*corev1.Pod, nodes []*simulation.Node) map[types.NamespacedName]int {
	out := map[types.NamespacedName]int{}
	count := func(pods []*corev1.Pod) {
		for _, pod := range pods {
			if IsVirtual(pod) || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
				continue
			}
			if name := autoscalingv1.ConsumedRequest(pod.Annotations); name != "" {
				out[types.NamespacedName{Namespace: pod.Namespace, Name: name}]++
			}
		}
	}
	count(pending)
	for _, n := range nodes {
		count(n.Pods)
	}
	return out
}

// Reserve places the booked virtual pods on the nodes of in where they fit,
// before anything else (a solve over in's nodes without NodePools), and
// adds each as a pod bound to its node, so pods solved afterwards do not
// count that room (Cluster Autoscaler books capacity the same way). It
// returns the booked pods that fit no node, which still need room.
func Reserve(ctx context.Context, in simulation.Input, booked []*corev1.Pod) []*corev1.Pod {
	if len(booked) == 0 {
		return nil
	}
	in.Pods, in.NodePools, in.Headroom = booked, nil, nil
	res := simulation.Solve(ctx, in)
	for _, ep := range res.ExistingNodes {
		for _, pod := range ep.Pods {
			bound := pod.DeepCopy()
			bound.Spec.NodeName = ep.Node.Name
			bound.Status.Phase = corev1.PodRunning
			ep.Node.Pods = append(slices.Clip(ep.Node.Pods), bound)
		}
	}
	var rest []*corev1.Pod
	for _, pe := range res.PodErrors {
		rest = append(rest, pe.Pod)
	}
	return rest
}
