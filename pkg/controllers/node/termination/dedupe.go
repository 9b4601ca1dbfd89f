package termination

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// dedupe remembers the last message of each event reason per node, so a
// drain that waits many passes for the same thing says so once.
type dedupe struct {
	mu   sync.Mutex
	last map[types.UID]map[string]string
}

func newDedupe() *dedupe { return &dedupe{last: map[types.UID]map[string]string{}} }

// changed records msg for (uid, reason) and reports whether it differs
// from the last one.
func (d *dedupe) changed(uid types.UID, reason, msg string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	byReason := d.last[uid]
	if byReason == nil {
		byReason = map[string]string{}
		d.last[uid] = byReason
	}
	if byReason[reason] == msg {
		return false
	}
	byReason[reason] = msg
	return true
}

func (d *dedupe) forget(uid types.UID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.last, uid)
}

// eventOnce publishes a warning about node unless the same one was the last.
func (c *Controller) eventOnce(node *corev1.Node, reason, msg string) {
	if c.dedupe.changed(node.UID, reason, msg) {
		c.recorder.Eventf(node, nil, corev1.EventTypeWarning, reason, "Drain", "%s", msg)
	}
}
