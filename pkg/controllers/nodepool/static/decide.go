package static

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// member is one node (or in-flight NodeClaim) of a static NodePool, as the
// decision needs it.
type member struct {
	// name is the NodeClaim's name.
	name string
	// leaving is set when the NodeClaim or its Node is being deleted, or
	// a disruption command marked it for deletion.
	leaving bool
	// launched and initialized follow the NodeClaim's conditions.
	launched, initialized bool
	// pods counts the pods that would have to move (not DaemonSet, mirror
	// or terminal pods); protected is set when one of them, or the node,
	// must not be disrupted (karpenter.sh/do-not-disrupt).
	pods      int
	protected bool
	// drifted is the NodeClaim's Drifted condition.
	drifted bool
	created time.Time
}

// decision is what to do for a static NodePool now.
type decision struct {
	// create is how many NodeClaims to launch.
	create int
	// remove are the NodeClaims to delete, in order.
	remove []string
	// active is how many of its nodes stay (not leaving), initialized how
	// many of those are initialized, and target the count it aims for:
	// its replicas, capped by limits.nodes.
	active, initialized, target int
	// capped is set when limits.nodes keeps the NodePool below its
	// replicas.
	capped bool
}

// decide returns how to bring the NodePool to replicas: every node that
// stays counts toward them; the node limit (nodeLimit < 0: none) caps all
// its nodes, leaving ones included. Surplus nodes go in scale-down order
// (lessDisruptive).
func decide(replicas int64, nodeLimit int64, members []member) decision {
	d := decision{}
	var staying []member
	for _, m := range members {
		if m.leaving {
			continue
		}
		staying = append(staying, m)
		if m.initialized {
			d.initialized++
		}
	}
	d.active = len(staying)
	target := replicas
	if nodeLimit >= 0 && nodeLimit < replicas {
		target, d.capped = nodeLimit, true
	}
	d.target = clampInt(target)
	if surplus := d.active - clampInt(replicas); surplus > 0 {
		sort.SliceStable(staying, func(i, j int) bool { return lessDisruptive(staying[i], staying[j]) })
		for _, m := range staying[:surplus] {
			d.remove = append(d.remove, m.name)
		}
		return d
	}
	missing := d.target - d.active
	if nodeLimit >= 0 {
		// Leaving nodes hold their place under the limit until they are gone.
		missing = min(missing, clampInt(nodeLimit)-len(members))
	}
	d.create = max(missing, 0)
	return d
}

// lessDisruptive orders scale-down candidates: NodeClaims not launched
// yet, then nodes not initialized, then nodes without protected pods,
// drifted ones, those with fewer pods to move, and the youngest.
func lessDisruptive(a, b member) bool {
	switch {
	case a.launched != b.launched:
		return !a.launched
	case a.initialized != b.initialized:
		return !a.initialized
	case a.protected != b.protected:
		return !a.protected
	case a.drifted != b.drifted:
		return a.drifted
	case a.pods != b.pods:
		return a.pods < b.pods
	case !a.created.Equal(b.created):
		return a.created.After(b.created)
	}
	return a.name < b.name
}

// clampInt converts a count from the API (int64) to int.
func clampInt(n int64) int {
	return int(min(max(n, 0), math.MaxInt32))
}

// Reasons of the ReplicasServed condition (and of the events saying the
// same).
const (
	// ReasonReplicasServed: the NodePool has its replicas, all
	// initialized (the condition is True).
	ReasonReplicasServed = "ReplicasServed"
	// ReasonScalingUp: NodeClaims are launching or nodes initializing.
	ReasonScalingUp = "ScalingUp"
	// ReasonScalingDown: surplus nodes are being deleted.
	ReasonScalingDown = "ScalingDown"
	// ReasonNodeLimitReached: limits.nodes is below spec.replicas; the
	// NodePool keeps at most limits.nodes nodes.
	ReasonNodeLimitReached = "NodeLimitReached"
	// ReasonNodePoolNotReady: the NodePool is not Ready, so nothing is
	// launched for it.
	ReasonNodePoolNotReady = "NodePoolNotReady"
	// ReasonNoCompatibleInstanceTypes: no NodeClaim can be rendered from
	// the template (no instance type satisfies it, or none holds its
	// DaemonSets), or the instance types cannot be listed.
	ReasonNoCompatibleInstanceTypes = "NoCompatibleInstanceTypes"
)

// condition is the ReplicasServed condition a decision leaves: status
// True, or the reason and message of False.
func (d decision) condition(replicas, nodeLimit int64) (served bool, reason, message string) {
	switch {
	case len(d.remove) > 0 || d.active > clampInt(replicas):
		return false, ReasonScalingDown, fmt.Sprintf("%d nodes for %d replicas; deleting %d", d.active, replicas, len(d.remove))
	case d.active < d.target && d.create == 0:
		return false, ReasonScalingUp, fmt.Sprintf("%d of %d nodes; waiting for leaving nodes to go (limits.nodes is %d)",
			d.active, d.target, nodeLimit)
	case d.active < d.target:
		return false, ReasonScalingUp, fmt.Sprintf("%d of %d nodes; launching %d", d.active, d.target, d.create)
	case d.initialized < d.active:
		return false, ReasonScalingUp, fmt.Sprintf("%d of %d nodes initialized", d.initialized, d.target)
	case d.capped:
		return false, ReasonNodeLimitReached, fmt.Sprintf("spec.replicas is %d but limits.nodes is %d: the NodePool keeps %d nodes",
			replicas, nodeLimit, d.target)
	}
	return true, ReasonReplicasServed, fmt.Sprintf("%d of %d nodes initialized", d.initialized, replicas)
}
