package provisioning

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
)

// Event reasons the provisioner publishes on pods.
const (
	// ReasonNominated: karp expects the pod to land on a node that exists,
	// is launching, or was just created for it.
	ReasonNominated = "Nominated"
	// ReasonFailedScheduling: karp cannot place the pod; the message
	// carries the solver's reasons.
	ReasonFailedScheduling = "FailedScheduling"
)

// maxMessageLength caps event messages (the API limit is 1kB).
const maxMessageLength = 1000

// dedupeWindow is how long an identical event on the same object is
// suppressed, as upstream's recorder does.
const dedupeWindow = 2 * time.Minute

// EventRecorder is the part of k8s.io/client-go/tools/events'
// EventRecorder the provisioner uses.
type EventRecorder interface {
	Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...interface{})
}

// Recorder publishes the provisioner's events, deduplicated per object
// UID, reason and message for two minutes.
type Recorder struct {
	recorder EventRecorder
	clock    clock.Clock

	mu   sync.Mutex
	seen map[string]time.Time
}

// NewRecorder wraps an event recorder with deduplication.
func NewRecorder(recorder EventRecorder, clk clock.Clock) *Recorder {
	return &Recorder{recorder: recorder, clock: clk, seen: map[string]time.Time{}}
}

// Nominated says where the pod is expected to run.
func (r *Recorder) Nominated(pod *corev1.Pod, target string) {
	r.publish(pod, corev1.EventTypeNormal, ReasonNominated, "Provisioning", "Pod should schedule on: "+target)
}

// FailedScheduling says why karp cannot place the pod.
func (r *Recorder) FailedScheduling(pod *corev1.Pod, reason string) {
	r.publish(pod, corev1.EventTypeWarning, ReasonFailedScheduling, "Provisioning", "Failed to schedule pod, "+reason)
}

func (r *Recorder) publish(pod *corev1.Pod, eventType, reason, action, message string) {
	if len(message) > maxMessageLength {
		message = message[:maxMessageLength-3] + "..."
	}
	key := string(pod.UID) + "\x00" + reason + "\x00" + message
	now := r.clock.Now()
	r.mu.Lock()
	if last, ok := r.seen[key]; ok && now.Sub(last) < dedupeWindow {
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
	r.recorder.Eventf(pod, nil, eventType, reason, action, "%s", message)
}
