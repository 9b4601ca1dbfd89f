package disruption

import (
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// Event reasons, as upstream names them.
const (
	ReasonDisruptionBlocked          = "DisruptionBlocked"
	ReasonUnconsolidatable           = "Unconsolidatable"
	ReasonDisruptionLaunching        = "DisruptionLaunching"
	ReasonDisruptionWaitingReadiness = "DisruptionWaitingReadiness"
	ReasonDisruptionTerminating      = "DisruptionTerminating"
	ReasonConsolidationRejected      = "ConsolidationRejected"
)

// maxMessageLength caps event messages (the API limit is 1kB).
const maxMessageLength = 1000

// EventRecorder is the part of k8s.io/client-go/tools/events'
// EventRecorder the controller uses.
type EventRecorder interface {
	Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...interface{})
}

// recorder publishes the controller's events, each at most once per
// object, reason and message (a node's "why not" is re-published only when
// it changes). What it remembers is filed under the node each event is
// about (a DaemonSet pod's event under the node it targets) and dropped
// with the node: when karp starts disrupting it (forget) or when a pass
// no longer sees it (retain), so the memory is bounded by the nodes that
// exist.
type recorder struct {
	rec EventRecorder

	mu   sync.Mutex
	last map[eventKey]string // -> last message
}

// eventKey is one object's events of one reason, filed under a node's UID.
type eventKey struct {
	node, object, reason string
}

func newRecorder(rec EventRecorder) *recorder {
	return &recorder{rec: rec, last: map[eventKey]string{}}
}

// publish sends an event about obj (UID uid) unless the same message of
// the same reason was the last one sent; node is the UID of the node the
// event is about.
func (r *recorder) publish(obj runtime.Object, node, uid, eventType, reason, message string) {
	if r.rec == nil || obj == nil {
		return
	}
	if len(message) > maxMessageLength {
		message = message[:maxMessageLength-3] + "..."
	}
	key := eventKey{node: node, object: uid, reason: reason}
	r.mu.Lock()
	if last, ok := r.last[key]; ok && last == message {
		r.mu.Unlock()
		return
	}
	r.last[key] = message
	r.mu.Unlock()
	r.rec.Eventf(obj, nil, eventType, reason, "Disruption", "%s", message)
}

// forget drops what was published about a node, so a node that comes back
// to the same state is reported again.
func (r *recorder) forget(node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.last {
		if k.node == node {
			delete(r.last, k)
		}
	}
}

// retain drops what was published about every node whose UID is not in
// nodes (the nodes that exist).
func (r *recorder) retain(nodes map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.last {
		if !nodes[k.node] {
			delete(r.last, k)
		}
	}
}

// blocked says why the node is not disrupted.
func (r *recorder) blocked(node *corev1.Node, b blocker) {
	reason := ReasonDisruptionBlocked
	switch b.reason {
	case BlockedConsolidateAfter, BlockedNoCheaper, BlockedSpotToSpot, BlockedPolicy, BlockedUnknownPrice, BlockedDisabled:
		reason = ReasonUnconsolidatable
	}
	r.publish(node, string(node.UID), string(node.UID), corev1.EventTypeNormal, reason, b.message)
}

func (r *recorder) launching(c *Candidate, cmd Command, replacements []string) {
	msg := fmt.Sprintf("Disrupting node: %s (%s)", cmd.Reason, cmd.Decision())
	if len(replacements) > 0 {
		msg += ", launching " + strings.Join(replacements, ", ")
	}
	r.publish(c.StateNode.Node, string(c.StateNode.Node.UID), string(c.StateNode.Node.UID), corev1.EventTypeNormal, ReasonDisruptionLaunching, msg)
}

func (r *recorder) waiting(c *Candidate, replacements []string) {
	r.publish(c.StateNode.Node, string(c.StateNode.Node.UID), string(c.StateNode.Node.UID), corev1.EventTypeNormal, ReasonDisruptionWaitingReadiness,
		"Waiting on readiness to continue disruption: "+strings.Join(replacements, ", "))
}

func (r *recorder) terminating(c *Candidate, cmd Command) {
	r.publish(c.StateNode.Node, string(c.StateNode.Node.UID), string(c.StateNode.Node.UID), corev1.EventTypeNormal, ReasonDisruptionTerminating,
		fmt.Sprintf("Disrupting node: %s", cmd.Reason))
}

func (r *recorder) rejected(c *Candidate, why string) {
	r.publish(c.StateNode.Node, string(c.StateNode.Node.UID), string(c.StateNode.Node.UID), corev1.EventTypeNormal, ReasonConsolidationRejected, why)
}

func hasDisruptedTaint(taints []corev1.Taint) bool {
	for _, t := range taints {
		if t.Key == karpv1.DisruptedTaintKey {
			return true
		}
	}
	return false
}
