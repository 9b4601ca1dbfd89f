package provisioning

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/state/buffers"
)

// Event reasons the provisioner publishes on pods.
const (
	// ReasonNominated: karp expects the pod to land on a node that exists,
	// is launching, or was just created for it.
	ReasonNominated = "Nominated"
	// ReasonFailedScheduling: karp cannot place the pod; the message
	// carries the solver's reasons.
	ReasonFailedScheduling = "FailedScheduling"
	// ReasonNoCompatibleInstanceTypes (on a NodePool): its requirements
	// leave no instance type with an available offering, so it cannot
	// launch anything and the provisioner skips it.
	ReasonNoCompatibleInstanceTypes = "NoCompatibleInstanceTypes"
)

// maxMessageLength caps event messages (the API limit is 1kB).
const maxMessageLength = 1000

// dedupeWindow is how long an identical event on the same object is
// suppressed, as upstream's recorder does.
const dedupeWindow = 2 * time.Minute

// nodePoolDedupeWindow is upstream's shorter window for
// NoCompatibleInstanceTypes: a NodePool fixed and broken again is told
// about within a minute.
const nodePoolDedupeWindow = time.Minute

// Nominated events are rate limited across all pods, as upstream's are:
// a burst of nominationBurst, then nominationQPS a second. A scale-out of
// a thousand pods would otherwise write a thousand events while the API
// server is busiest (creating the pods, the nodes and the scheduler's own
// events), and slow the launch it reports on. A pod whose event was
// dropped is told on its next nomination, if it still has none.
const (
	nominationQPS   = 5
	nominationBurst = 10
)

// EventRecorder is the part of k8s.io/client-go/tools/events'
// EventRecorder the provisioner uses.
type EventRecorder interface {
	Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...interface{})
}

// Recorder publishes the provisioner's events, deduplicated per object
// UID, reason and message for two minutes (one for NodePools).
type Recorder struct {
	recorder EventRecorder
	clock    clock.Clock

	// nominations limits Nominated events.
	nominations flowcontrol.PassiveRateLimiter

	mu   sync.Mutex
	seen map[string]time.Time
}

// NewRecorder wraps an event recorder with deduplication.
func NewRecorder(recorder EventRecorder, clk clock.Clock) *Recorder {
	return &Recorder{recorder: recorder, clock: clk, seen: map[string]time.Time{},
		nominations: flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(nominationQPS, nominationBurst, clk)}
}

// Nominated says where the pod is expected to run.
func (r *Recorder) Nominated(pod *corev1.Pod, target string) {
	if buffers.IsVirtual(pod) {
		// A CapacityBuffer's virtual pod exists only in the simulation.
		return
	}
	r.publishLimited(pod, corev1.EventTypeNormal, ReasonNominated, "Provisioning", "Pod should schedule on: "+target, dedupeWindow, r.nominations)
}

// FailedScheduling says why karp cannot place the pod.
func (r *Recorder) FailedScheduling(pod *corev1.Pod, reason string) {
	if buffers.IsVirtual(pod) {
		return
	}
	r.publish(pod, corev1.EventTypeWarning, ReasonFailedScheduling, "Provisioning", "Failed to schedule pod, "+reason, dedupeWindow)
}

// NoCompatibleInstanceTypes says the NodePool's requirements filter out
// every instance type with an available offering.
func (r *Recorder) NoCompatibleInstanceTypes(nodePool *karpv1.NodePool) {
	r.publish(nodePool, corev1.EventTypeWarning, ReasonNoCompatibleInstanceTypes, "Provisioning",
		"NodePool requirements filtered out all compatible available instance types", nodePoolDedupeWindow)
}

func (r *Recorder) publish(obj client.Object, eventType, reason, action, message string, window time.Duration) {
	r.publishLimited(obj, eventType, reason, action, message, window, nil)
}

// publishLimited publishes an event not seen within window, if limiter
// (when set) has a token for it; an event the limiter drops is not
// remembered, so it may go out the next time.
func (r *Recorder) publishLimited(obj client.Object, eventType, reason, action, message string, window time.Duration, limiter flowcontrol.PassiveRateLimiter) {
	if len(message) > maxMessageLength {
		message = message[:maxMessageLength-3] + "..."
	}
	key := string(obj.GetUID()) + "\x00" + reason + "\x00" + message
	now := r.clock.Now()
	r.mu.Lock()
	if last, ok := r.seen[key]; ok && now.Sub(last) < window {
		r.mu.Unlock()
		return
	}
	if limiter != nil && !limiter.TryAccept() {
		r.mu.Unlock()
		return
	}
	r.seen[key] = now
	if len(r.seen) > 10000 {
		for k, t := range r.seen {
			if now.Sub(t) >= dedupeWindow {
				delete(r.seen, k)
			}
		}
	}
	r.mu.Unlock()
	// The message is passed as an argument so a "%" in it is not a verb.
	r.recorder.Eventf(obj, nil, eventType, reason, action, "%s", message)
}
