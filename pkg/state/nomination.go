package state

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// nomination says a pending pod is expected to land on a StateNode (one
// that exists, is in flight, or was just created) until expires.
type nomination struct {
	nodeID  string
	expires time.Time
}

// Nominate records that the pod should land on the StateNode with the given
// ID for ttl. Nominated pods count against that node's capacity in
// Snapshot and are not provisionable, so the next batch does not provision
// for them again.
func (c *Cluster) Nominate(pod *corev1.Pod, nodeID string, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nominations[client.ObjectKeyFromObject(pod)] = nomination{nodeID: nodeID, expires: c.now().Add(ttl)}
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
		// placed again elsewhere.
		if pod, ok := c.pods[key]; ok {
			out[n.nodeID] = append(out[n.nodeID], pod)
		}
	}
	for id := range out {
		slices.SortFunc(out[id], func(a, b *corev1.Pod) int {
			return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
		})
	}
	return out
}

// sortedKeys returns a map's keys in a stable order.
func sortedKeys[K comparable, V any](m map[K]V) []K {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b K) int { return strings.Compare(keyString(a), keyString(b)) })
	return keys
}

func keyString(k any) string {
	switch v := k.(type) {
	case string:
		return v
	case types.NamespacedName:
		return v.String()
	}
	return fmt.Sprint(k)
}
