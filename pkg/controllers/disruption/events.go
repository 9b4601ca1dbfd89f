package disruption

import (
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// Event reasons, as upstream names them.
const (
	ReasonDisruptionBlocked          = "DisruptionBlocked"
	ReasonUnconsolidatable           = "Unconsolidatable"
	ReasonDisruptionLaunching        = "DisruptionLaunching"
	ReasonDisruptionWaitingReadiness = "DisruptionWaitingReadiness"
	ReasonDisruptionTerminating      = "DisruptionTerminating"
	ReasonConsolidationRejected      = "ConsolidationRejected"
	ReasonConsolidationCandidate     = "ConsolidationCandidate"
	ReasonConsolidationApproved      = "ConsolidationApproved"
	// Pod events about the karpenter.sh/do-not-disrupt annotation.
	ReasonInvalidDoNotDisruptAnnotation  = "InvalidDoNotDisruptAnnotation"
	ReasonDoNotDisruptUntil              = "DoNotDisruptUntil"
	ReasonDoNotDisruptGracePeriodElapsed = "DoNotDisruptGracePeriodElapsed"
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

// candidate announces, on the node and its NodeClaim, a consolidation
// command computed for it (before validation), with the command and the
// estimated hourly savings.
func (r *recorder) candidate(c *Candidate, cmd Command) {
	what := cmd.String()
	if len(cmd.Candidates) > 1 {
		what = fmt.Sprintf("%s: [%s] (part of %d-node consolidation)", cmd.Decision(), c.Name(), len(cmd.Candidates))
	}
	msg := fmt.Sprintf("Consolidation candidate: %s (savings: $%.2f)", what, cmd.Savings)
	node := string(c.StateNode.Node.UID)
	r.publish(c.StateNode.Node, node, node, corev1.EventTypeNormal, ReasonConsolidationCandidate, msg)
	if nc := c.StateNode.NodeClaim; nc != nil {
		r.publish(nc, node, string(nc.UID), corev1.EventTypeNormal, ReasonConsolidationCandidate, msg)
	}
}

// approved records that a Balanced NodePool accepted a move: on the node
// and its NodeClaim for a single-node move, on the NodePool otherwise.
func (r *recorder) approved(cmd Command, nodePool *karpv1.NodePool, s balancedScore) {
	msg := fmt.Sprintf("score %.2f >= threshold %.2f (k: %d, savings %.1f%%, disruption %.1f%%)",
		s.score, balancedThreshold, balancedK, s.savingsPct, s.disruptionPct)
	if len(cmd.Candidates) == 0 {
		return
	}
	// Filed under the first candidate's node, so it is forgotten with it.
	c := cmd.Candidates[0]
	node := string(c.StateNode.Node.UID)
	if len(cmd.Candidates) != 1 {
		r.publish(nodePool, node, string(nodePool.UID), corev1.EventTypeNormal, ReasonConsolidationApproved, msg)
		return
	}
	r.publish(c.StateNode.Node, node, node, corev1.EventTypeNormal, ReasonConsolidationApproved, msg)
	if nc := c.StateNode.NodeClaim; nc != nil {
		r.publish(nc, node, string(nc.UID), corev1.EventTypeNormal, ReasonConsolidationApproved, msg)
	}
}

// doNotDisrupt reports on the pod what its duration-valued
// karpenter.sh/do-not-disrupt annotation means now; node is the UID of
// the node the pod runs on.
func (r *recorder) doNotDisrupt(node string, pod *corev1.Pod, dnd doNotDisruptStatus) {
	switch {
	case dnd.invalid != "":
		r.publish(pod, node, string(pod.UID), corev1.EventTypeWarning, ReasonInvalidDoNotDisruptAnnotation,
			scheduling.DoNotDisruptIgnoredMessage(dnd.invalid))
	case !dnd.until.IsZero() && dnd.active:
		r.publish(pod, node, string(pod.UID), corev1.EventTypeNormal, ReasonDoNotDisruptUntil,
			fmt.Sprintf("The %s grace period will elapse at %s", karpv1.DoNotDisruptAnnotationKey, dnd.until.UTC().Format(time.RFC3339)))
	case !dnd.until.IsZero():
		r.publish(pod, node, string(pod.UID), corev1.EventTypeNormal, ReasonDoNotDisruptGracePeriodElapsed,
			fmt.Sprintf("The %s grace period has elapsed, pod is now disruptable", karpv1.DoNotDisruptAnnotationKey))
	}
}

// nodeDoNotDisrupt warns on the Node and the NodeClaim of sn when their
// karpenter.sh/do-not-disrupt annotation is anything but "true": only
// "true" protects a node (a duration is a pod's), so another value is
// ignored, as upstream ignores it, but no longer silently.
func (r *recorder) nodeDoNotDisrupt(sn *state.StateNode) {
	node := string(sn.Node.UID)
	objs := []client.Object{sn.Node}
	if sn.NodeClaim != nil {
		objs = append(objs, sn.NodeClaim)
	}
	for _, obj := range objs {
		v, ok := obj.GetAnnotations()[karpv1.DoNotDisruptAnnotationKey]
		if !ok || v == "true" {
			continue
		}
		r.publish(obj, node, string(obj.GetUID()), corev1.EventTypeWarning, ReasonInvalidDoNotDisruptAnnotation,
			fmt.Sprintf("Invalid %s annotation: %q, ignoring annotation (only \"true\" protects a node)", karpv1.DoNotDisruptAnnotationKey, v))
	}
}

func hasDisruptedTaint(taints []corev1.Taint) bool {
	for _, t := range taints {
		if t.Key == karpv1.DisruptedTaintKey {
			return true
		}
	}
	return false
}
