package state

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// nomination says a pending pod is expected to land on a StateNode (one
// that exists, is in flight, or was just created) until expires.
type nomination struct {
	nodeID  string
	expires time.Time
	// unhinted pods are left to the scheduler's own placement: no
	// scheduler hint is written for them (see HintedPods).
	unhinted bool
}

// Nominate records that the pod should land on the StateNode with the given
// ID for ttl. Nominated pods count against that node's capacity in
// Snapshot and are not provisionable, so the next batch does not provision
// for them again.
func (c *Cluster) Nominate(pod *corev1.Pod, nodeID string, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nominations[client.ObjectKeyFromObject(pod)] = nomination{nodeID: nodeID, expires: c.now().Add(ttl)}
	c.markDecided(pod)
}

// NominateUnhinted is Nominate for a pod the scheduler is trusted to place
// without a hint.
func (c *Cluster) NominateUnhinted(pod *corev1.Pod, nodeID string, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nominations[client.ObjectKeyFromObject(pod)] = nomination{nodeID: nodeID, expires: c.now().Add(ttl), unhinted: true}
	c.markDecided(pod)
}

// RenewNominations extends the nominations to the StateNode with the
// given ID to last at least ttl from now, and returns how many it
// extended. A nomination counts down from when it was made, but pods
// cannot land on a node the batch hold keeps closed: once the hold is
// lifted, its pods get a full ttl to be bound, instead of expiring while
// the scheduler works through a large batch and being solved again (with
// events, hints and possibly another node) moments before they land. A
// nomination that ran out while the hold lasted is renewed too: the pod
// is still pending (a bound or deleted pod's nomination is gone) and no
// solve has sent it elsewhere since (that would have replaced it), so
// this node is still where it is going.
func (c *Cluster) RenewNominations(nodeID string, ttl time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	until := c.now().Add(ttl)
	renewed := 0
	for key, n := range c.nominations {
		if n.nodeID != nodeID || !n.expires.Before(until) {
			continue
		}
		n.expires = until
		c.nominations[key] = n
		renewed++
	}
	return renewed
}

// ReleaseNominations drops every nomination to the StateNode with the
// given ID and returns how many it dropped: the pods are no longer
// expected there (a disruption command that meant to move them to it was
// rolled back), so the node's room is free again for the next solve.
func (c *Cluster) ReleaseNominations(nodeID string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	released := 0
	for key, n := range c.nominations {
		if n.nodeID == nodeID {
			delete(c.nominations, key)
			released++
		}
	}
	return released
}

// HintedNode returns the ID of the StateNode the pod is nominated to with
// a scheduler hint, or "".
func (c *Cluster) HintedNode(key types.NamespacedName) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if n, ok := c.nominations[key]; !ok || n.unhinted {
		return ""
	}
	return c.activeNomination(key)
}

// NominatedNode returns the ID of the StateNode the pod is nominated to,
// or "" when it has no unexpired nomination.
func (c *Cluster) NominatedNode(key types.NamespacedName) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.activeNomination(key)
}

func (c *Cluster) activeNomination(key types.NamespacedName) string {
	n, ok := c.nominations[key]
	if !ok || !c.now().Before(n.expires) {
		return ""
	}
	return n.nodeID
}

// nominatedTo returns the pending pods with an unexpired nomination,
// grouped by StateNode ID.
func (c *Cluster) nominatedTo() map[string][]*corev1.Pod {
	out := map[string][]*corev1.Pod{}
	now := c.now()
	for key, n := range c.nominations {
		if !now.Before(n.expires) {
			continue
		}
		// Pending pods, and bound pods of a node being deleted that were
		// placed again elsewhere. A terminating pod lands nowhere (an
		// evicted pod's owner makes a new one, which needs the room): it
		// keeps none.
		if pod, ok := c.pods[key]; ok && pod.DeletionTimestamp == nil {
			out[n.nodeID] = append(out[n.nodeID], pod)
		}
	}
	for id := range out {
		slices.SortFunc(out[id], byNamespacedName)
	}
	return out
}

// byNamespacedName orders pods by namespace, then name (without building
// the key strings: this runs for every comparison of a large sort).
func byNamespacedName(a, b *corev1.Pod) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
}

// HintedPods returns the pods with an unexpired nomination to the
// StateNode with the given ID that are to carry a scheduler hint, in
// namespace/name order. The pods are shared (see the package documentation).
func (c *Cluster) HintedPods(nodeID string) []*corev1.Pod {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*corev1.Pod
	now := c.now()
	for key, n := range c.nominations {
		if n.nodeID != nodeID || n.unhinted || !now.Before(n.expires) {
			continue
		}
		if pod, ok := c.pods[key]; ok {
			out = append(out, pod)
		}
	}
	slices.SortFunc(out, byNamespacedName)
	return out
}

// sortedKeys returns a map's keys in a stable order: names, or
// namespace then name.
func sortedKeys[K string | types.NamespacedName, V any](m map[K]V) []K {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, compareKeys[K])
	return keys
}

// compareKeys orders names, or namespaced names by namespace then name,
// without building strings (it runs for every pod of a large cluster).
func compareKeys[K string | types.NamespacedName](a, b K) int {
	switch x := any(a).(type) {
	case string:
		return strings.Compare(x, any(b).(string))
	case types.NamespacedName:
		y := any(b).(types.NamespacedName)
		return cmp.Or(strings.Compare(x.Namespace, y.Namespace), strings.Compare(x.Name, y.Name))
	}
	panic(fmt.Sprintf("compareKeys: unsupported key type %T", a))
}

// ReleaseOvercommittedNominations drops the nominations to registered
// nodes that can no longer hold the nominated pods: the kube-scheduler
// binds whichever pending pod fits first, so a node karp meant for one pod
// may fill up with another. Nominations are kept while they fit, hinted
// ones first, then oldest first; the rest are released so their pods are
// provisioned again now instead of when the nomination expires. In-flight
// NodeClaims keep theirs (their capacity is not known yet). It returns how
// many were released.
//
// Hinted first: the scheduler counts a hinted pod against its node while
// it places others, so that room stays the pod's; an unhinted pod (the
// fill) goes wherever the scheduler puts it, and the alike pod it bound
// to this node in its place left the same room on the node it was meant
// for. Releasing a hinted pod instead (all the nominations of one solve
// expire together) made karp see no room for it and launch a node while
// the scheduler was about to bind it on its planned one.
func (c *Cluster) ReleaseOvercommittedNominations() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	byTarget := map[string][]types.NamespacedName{}
	for key, n := range c.nominations {
		if now.Before(n.expires) {
			byTarget[n.nodeID] = append(byTarget[n.nodeID], key)
		}
	}
	released := 0
	for id, keys := range byTarget {
		node := c.registeredNode(id)
		if node == nil {
			continue
		}
		free := node.Status.Allocatable.DeepCopy()
		for _, pod := range c.podsByNode[node.Name] {
			if pod.DeletionTimestamp == nil {
				subtract(free, scheduling.PodRequests(pod))
			}
		}
		slices.SortFunc(keys, c.keepOrder)
		for _, key := range keys {
			pod, ok := c.pods[key]
			if !ok || pod.Spec.NodeName != "" {
				continue
			}
			req := scheduling.PodRequests(pod)
			if fits(req, free) {
				subtract(free, req)
				continue
			}
			delete(c.nominations, key)
			released++
		}
	}
	return released
}

// keepOrder orders the nominations to one node by which to keep first:
// hinted before unhinted, older before newer, then by pod key.
func (c *Cluster) keepOrder(a, b types.NamespacedName) int {
	na, nb := c.nominations[a], c.nominations[b]
	if na.unhinted != nb.unhinted {
		if nb.unhinted {
			return -1
		}
		return 1
	}
	return cmp.Or(na.expires.Compare(nb.expires), compareKeys(a, b))
}

// registeredNode is the Node behind a StateNode ID when it has registered
// and reports allocatable capacity.
func (c *Cluster) registeredNode(id string) *corev1.Node {
	var node *corev1.Node
	if name, ok := strings.CutPrefix(id, "nodeclaim/"); ok {
		nc, ok := c.nodeClaims[name]
		if !ok || nc.Status.ProviderID == "" {
			return nil
		}
		for _, n := range c.nodes {
			if n.Spec.ProviderID == nc.Status.ProviderID {
				node = n
				break
			}
		}
	} else if name, ok := strings.CutPrefix(id, "node/"); ok {
		node = c.nodes[name]
	}
	if node == nil || len(node.Status.Allocatable) == 0 {
		return nil
	}
	return node
}

func subtract(from, q corev1.ResourceList) {
	for name, v := range q {
		left := from[name]
		left.Sub(v)
		from[name] = left
	}
}

func fits(req, free corev1.ResourceList) bool {
	for name, v := range req {
		if v.IsZero() {
			continue
		}
		have, ok := free[name]
		if !ok || have.Cmp(v) < 0 {
			return false
		}
	}
	return true
}
