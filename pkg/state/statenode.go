package state

import (
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// StateNode is one node of the view: a NodeClaim joined with its Node by
// provider ID. NodeClaim is nil for Nodes karp does not manage; Node is nil
// while the NodeClaim is in flight. Every field is an owned copy.
type StateNode struct {
	Node      *corev1.Node
	NodeClaim *karpv1.NodeClaim
	// Pods are the non-terminal pods bound to the Node, by namespace/name.
	Pods []*corev1.Pod
	// Nominated are pending pods expected to land here.
	Nominated []*corev1.Pod
	// MarkedForDeletion is true when the NodeClaim or Node is being
	// deleted, the Node carries the disrupted taint, or MarkForDeletion was
	// called for the node's ID.
	MarkedForDeletion bool
}

// ID identifies the StateNode for nominations and MarkForDeletion: the
// NodeClaim's name when there is one (stable from creation to deletion),
// else the Node's.
func (n *StateNode) ID() string {
	if n.NodeClaim != nil {
		return nodeClaimID(n.NodeClaim.Name)
	}
	return nodeID(n.Node.Name)
}

// Name is the Node's name, or the NodeClaim's while it is in flight.
func (n *StateNode) Name() string {
	if n.Node != nil {
		return n.Node.Name
	}
	return n.NodeClaim.Name
}

// NodeClaimID is the ID of the StateNode of the named NodeClaim.
func NodeClaimID(name string) string { return nodeClaimID(name) }

func nodeClaimID(name string) string { return "nodeclaim/" + name }
func nodeID(name string) string      { return "node/" + name }

// Managed reports whether karp launched the node.
func (n *StateNode) Managed() bool { return n.NodeClaim != nil }

// NodePool is the karpenter.sh/nodepool label of the node, or "".
func (n *StateNode) NodePool() string { return n.Labels()[karpv1.NodePoolLabelKey] }

// Labels are the Node's labels, or the NodeClaim's while it is in flight.
func (n *StateNode) Labels() map[string]string {
	if n.Node != nil {
		return n.Node.Labels
	}
	return n.NodeClaim.Labels
}

// Initialized reports whether the node finished starting: unmanaged Nodes
// always are; managed ones once the NodeClaim is Initialized.
func (n *StateNode) Initialized() bool {
	if n.NodeClaim == nil {
		return true
	}
	return n.Node != nil && n.NodeClaim.StatusConditions().IsTrue(karpv1.ConditionTypeInitialized)
}

// Capacity is the Node's capacity, else what the NodeClaim's instance was
// launched with; empty while the NodeClaim has not launched. Until the
// NodeClaim is Initialized, a resource the Node does not report yet, or
// reports as zero, is the NodeClaim's (see resources).
func (n *StateNode) Capacity() corev1.ResourceList {
	return n.resources(func(nodeStatus *corev1.NodeStatus) corev1.ResourceList { return nodeStatus.Capacity },
		func(status *karpv1.NodeClaimStatus) corev1.ResourceList { return status.Capacity })
}

// Allocatable is the Node's allocatable, else the NodeClaim's, filled in
// from the NodeClaim's as Capacity is until it is Initialized.
func (n *StateNode) Allocatable() corev1.ResourceList {
	return n.resources(func(nodeStatus *corev1.NodeStatus) corev1.ResourceList { return nodeStatus.Allocatable },
		func(status *karpv1.NodeClaimStatus) corev1.ResourceList { return status.Allocatable })
}

// resources reads one of the Node's resource lists, else the NodeClaim's.
// A registering Node (its NodeClaim not yet Initialized) reports resources
// as they come up: a device plugin advertises its GPUs or EFA devices
// after the kubelet registered the Node, and until then the Node lists
// them as zero or not at all. Those are taken from the NodeClaim, which
// holds what the instance was launched with, so the pods the node was
// launched for still fit it and no second node is launched for them.
func (n *StateNode) resources(ofNode func(*corev1.NodeStatus) corev1.ResourceList,
	ofClaim func(*karpv1.NodeClaimStatus) corev1.ResourceList) corev1.ResourceList {
	var fromNode, fromClaim corev1.ResourceList
	if n.Node != nil {
		fromNode = ofNode(&n.Node.Status)
	}
	if n.NodeClaim != nil {
		fromClaim = ofClaim(&n.NodeClaim.Status)
	}
	switch {
	case len(fromNode) == 0:
		return fromClaim
	case n.Initialized() || len(fromClaim) == 0:
		return fromNode
	}
	var out corev1.ResourceList
	for name, q := range fromClaim {
		if have, ok := fromNode[name]; ok && !have.IsZero() {
			continue
		}
		if out == nil {
			out = fromNode.DeepCopy()
		}
		out[name] = q
	}
	if out == nil {
		return fromNode
	}
	return out
}

// PodRequests sums the requests of the bound pods that still hold
// capacity (not terminating), DaemonSet pods included.
func (n *StateNode) PodRequests() corev1.ResourceList {
	return sumRequests(n.Pods, func(*corev1.Pod) bool { return true })
}

// DaemonRequests sums the requests of the bound DaemonSet pods.
func (n *StateNode) DaemonRequests() corev1.ResourceList {
	return sumRequests(n.Pods, func(p *corev1.Pod) bool { return IsOwnedBy(p, "DaemonSet") })
}

// HostPorts lists the host ports the bound pods use.
func (n *StateNode) HostPorts() []scheduling.HostPort {
	var out []scheduling.HostPort
	for _, p := range n.Pods {
		if p.DeletionTimestamp == nil {
			out = append(out, scheduling.PodHostPorts(p)...)
		}
	}
	return out
}

func sumRequests(pods []*corev1.Pod, include func(*corev1.Pod) bool) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || !include(p) {
			continue
		}
		for name, q := range scheduling.PodRequests(p) {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	return out
}

// Nodes returns every StateNode, in-flight ones included, by name.
func (c *Cluster) Nodes() []*StateNode {
	c.mu.RLock()
	defer c.mu.RUnlock()
	nominated := c.nominatedTo()
	byProviderID := map[string]*corev1.Node{}
	for _, node := range c.nodes {
		if node.Spec.ProviderID != "" {
			byProviderID[node.Spec.ProviderID] = node
		}
	}
	joined := map[string]bool{}
	var out []*StateNode
	for _, nc := range c.nodeClaims {
		sn := &StateNode{NodeClaim: nc.DeepCopy()}
		if pid := nc.Status.ProviderID; pid != "" {
			if node, ok := byProviderID[pid]; ok {
				sn.Node = node.DeepCopy()
				joined[node.Name] = true
			}
		}
		out = append(out, c.fill(sn, nominated))
	}
	for _, node := range c.nodes {
		if !joined[node.Name] {
			out = append(out, c.fill(&StateNode{Node: node.DeepCopy()}, nominated))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// AwaitedPods returns, by Node name, the pending pods whose
// status.nominatedNodeName names a Node (karp's scheduler hint, or the
// scheduler's own nomination for preemption) and that have no unexpired
// nomination of karp's (those are among a StateNode's Nominated): the
// kube-scheduler has not tried them since they were sent there (it clears
// the name when it fails a pod), so they are on their way. They take no
// room in Snapshot (a pod karp no longer nominates is provisionable and
// placed by the solver as a pending pod). It looks at every pod: the
// disruption pass calls it once. The pods are shared (see the package
// documentation).
func (c *Cluster) AwaitedPods() map[string][]*corev1.Pod {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := map[string][]*corev1.Pod{}
	for key, pod := range c.pods {
		if name := pod.Status.NominatedNodeName; name != "" && pod.Spec.NodeName == "" &&
			pod.DeletionTimestamp == nil && c.activeNomination(key) == "" {
			out[name] = append(out[name], pod)
		}
	}
	for name := range out {
		slices.SortFunc(out[name], byNamespacedName)
	}
	return out
}

// fill adds the pods, nominations and deletion mark of a StateNode.
func (c *Cluster) fill(sn *StateNode, nominated map[string][]*corev1.Pod) *StateNode {
	if sn.Node != nil {
		for _, key := range sortedKeys(c.podsByNode[sn.Node.Name]) {
			sn.Pods = append(sn.Pods, c.podsByNode[sn.Node.Name][key])
		}
	}
	sn.Nominated = append(sn.Nominated, nominated[sn.ID()]...)
	sn.MarkedForDeletion = c.marked[sn.ID()] ||
		(sn.NodeClaim != nil && sn.NodeClaim.DeletionTimestamp != nil) ||
		(sn.Node != nil && sn.Node.DeletionTimestamp != nil) ||
		(sn.Node != nil && hasTaint(sn.Node.Spec.Taints, karpv1.DisruptedTaintKey) && c.starting[sn.ID()] == 0)
	return sn
}

func hasTaint(taints []corev1.Taint, key string) bool {
	for _, t := range taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// NodePoolUsage is what a NodePool's nodes hold: the summed capacity of
// the launched ones and the node count (in-flight NodeClaims included).
type NodePoolUsage struct {
	Resources corev1.ResourceList
	Nodes     int
}

// NodePoolUsage sums the nodes labeled with each NodePool, deleting ones
// included (they hold capacity until they are gone).
func (c *Cluster) NodePoolUsage() map[string]NodePoolUsage {
	out := map[string]NodePoolUsage{}
	for _, sn := range c.Nodes() {
		pool := sn.NodePool()
		if pool == "" || !sn.Managed() {
			continue
		}
		u := out[pool]
		if u.Resources == nil {
			u.Resources = corev1.ResourceList{}
		}
		for name, q := range sn.Capacity() {
			sum := u.Resources[name]
			sum.Add(q)
			u.Resources[name] = sum
		}
		u.Nodes++
		out[pool] = u
	}
	return out
}
