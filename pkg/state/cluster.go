package state

import (
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// Cluster is the in-memory cluster view. All methods are safe for
// concurrent use. The zero value is not usable; call NewCluster.
type Cluster struct {
	clock      clock.Clock
	kubeClient client.Reader

	mu          sync.RWMutex
	nodeClaims  map[string]*karpv1.NodeClaim // by name
	recordedAt  map[string]time.Time         // NodeClaim name → first recorded
	nodes       map[string]*corev1.Node      // by name
	pods        map[types.NamespacedName]*corev1.Pod
	podsByNode  map[string]map[types.NamespacedName]*corev1.Pod // by spec.nodeName
	daemonSets  *store[types.NamespacedName, *appsv1.DaemonSet]
	nodePools   *store[string, *karpv1.NodePool]
	pdbs        *store[types.NamespacedName, *policyv1.PodDisruptionBudget]
	nominations map[types.NamespacedName]nomination
	marked      map[string]bool // StateNode IDs marked for deletion
	// starting are StateNode IDs whose disruption is being started (see
	// HoldDisruptionStart): their karpenter.sh/disrupted taint alone does
	// not mark them for deletion yet.
	starting map[string]int
	started  map[types.UID]bool
	// decided is when the provisioner first placed each pending pod (its
	// first nomination), for the pod provisioning-time metrics.
	decided map[types.UID]time.Time
	// acks is when the provisioner first saw each pending pod and whether
	// it has decided about it, for the scheduling-decision metrics.
	acks      map[types.NamespacedName]schedulingAck
	createdAt time.Time
	// unsyncedSince is when Synced first found the view behind the API
	// server since it last found it synced (zero while synced), for
	// karpenter_cluster_state_unsynced_time_seconds.
	unsyncedSince time.Time
}

// NewCluster returns an empty view. kubeClient is what Synced compares the
// view against; pass the manager's (cached) client.
func NewCluster(clk clock.Clock, kubeClient client.Reader) *Cluster {
	c := &Cluster{
		clock:       clk,
		kubeClient:  kubeClient,
		nodeClaims:  map[string]*karpv1.NodeClaim{},
		recordedAt:  map[string]time.Time{},
		nodes:       map[string]*corev1.Node{},
		pods:        map[types.NamespacedName]*corev1.Pod{},
		podsByNode:  map[string]map[types.NamespacedName]*corev1.Pod{},
		nominations: map[types.NamespacedName]nomination{},
		marked:      map[string]bool{},
		starting:    map[string]int{},
		started:     map[types.UID]bool{},
		decided:     map[types.UID]time.Time{},
		acks:        map[types.NamespacedName]schedulingAck{},
		createdAt:   clk.Now(),
	}
	c.daemonSets = newStore(&c.mu, namespacedKey[*appsv1.DaemonSet])
	c.nodePools = newStore(&c.mu, nameKey[*karpv1.NodePool])
	c.pdbs = newStore(&c.mu, namespacedKey[*policyv1.PodDisruptionBudget])
	return c
}

// Clock is the clock the view reads.
func (c *Cluster) Clock() clock.Clock { return c.clock }

// UpdateNodeClaim records the NodeClaim (a copy).
func (c *Cluster) UpdateNodeClaim(nc *karpv1.NodeClaim) {
	nc = recorded(nc)
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.nodeClaims[nc.Name]
	if ok && old.UID != "" && nc.UID != "" && old.UID != nc.UID {
		delete(c.marked, nodeClaimID(old.Name))
		ok = false
	}
	if !ok {
		c.recordedAt[nc.Name] = c.now()
	}
	c.nodeClaims[nc.Name] = nc
}

// DeleteNodeClaim forgets the NodeClaim and releases the nominations to
// it: a NodeClaim that is gone (for example after its launch ran out of
// capacity) will never run those pods, so they are provisionable again now
// instead of when the nominations expire.
func (c *Cluster) DeleteNodeClaim(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.nodeClaims, name)
	delete(c.recordedAt, name)
	delete(c.marked, nodeClaimID(name))
	for key, n := range c.nominations {
		if n.nodeID == nodeClaimID(name) {
			delete(c.nominations, key)
		}
	}
}

// UpdateNode records the Node (a copy).
func (c *Cluster) UpdateNode(node *corev1.Node) {
	node = recorded(node)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes[node.Name] = node
}

// DeleteNode forgets the Node.
func (c *Cluster) DeleteNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.nodes, name)
	delete(c.marked, nodeID(name))
}

// UpdatePod records the pod. Terminal pods are forgotten: they hold no
// capacity and need no node.
//
// The Cluster keeps the pod itself, not a copy, and never changes it: the
// caller hands over an object nobody mutates afterwards (the state
// controller passes the informer cache's own object). Pods are by far the
// most numerous objects, and a second copy of each would double the
// memory their cache takes and the allocation every pod update costs.
// Everything the Cluster returns is a copy.
func (c *Cluster) UpdatePod(pod *corev1.Pod) {
	key := client.ObjectKeyFromObject(pod)
	if isTerminal(pod) {
		c.DeletePod(key)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.pods[key]; ok && old.Spec.NodeName == "" && pod.Spec.NodeName != "" {
		// The pod just got bound: its nomination has done its job, and
		// there is nothing left to decide about it.
		delete(c.nominations, key)
		delete(c.acks, key)
		c.observeBound(pod)
	}
	c.unbind(key)
	c.pods[key] = pod
	c.observeStartup(pod)
	if pod.Spec.NodeName != "" {
		byNode := c.podsByNode[pod.Spec.NodeName]
		if byNode == nil {
			byNode = map[types.NamespacedName]*corev1.Pod{}
			c.podsByNode[pod.Spec.NodeName] = byNode
		}
		byNode[key] = pod
	}
}

// DeletePod forgets the pod and its nomination.
func (c *Cluster) DeletePod(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if pod, ok := c.pods[key]; ok {
		delete(c.started, pod.UID)
		delete(c.decided, pod.UID)
	}
	c.unbind(key)
	delete(c.pods, key)
	delete(c.nominations, key)
	delete(c.acks, key)
}

func (c *Cluster) unbind(key types.NamespacedName) {
	old, ok := c.pods[key]
	if !ok || old.Spec.NodeName == "" {
		return
	}
	if byNode := c.podsByNode[old.Spec.NodeName]; byNode != nil {
		delete(byNode, key)
		if len(byNode) == 0 {
			delete(c.podsByNode, old.Spec.NodeName)
		}
	}
}

// UpdateDaemonSet records the DaemonSet (a copy).
func (c *Cluster) UpdateDaemonSet(ds *appsv1.DaemonSet) { c.daemonSets.update(ds) }

// DeleteDaemonSet forgets the DaemonSet.
func (c *Cluster) DeleteDaemonSet(key types.NamespacedName) { c.daemonSets.delete(key) }

// DaemonSets returns copies of every DaemonSet, in key order.
func (c *Cluster) DaemonSets() []*appsv1.DaemonSet { return c.daemonSets.list() }

// UpdateNodePool records the NodePool (a copy).
func (c *Cluster) UpdateNodePool(np *karpv1.NodePool) { c.nodePools.update(np) }

// DeleteNodePool forgets the NodePool.
func (c *Cluster) DeleteNodePool(name string) { c.nodePools.delete(name) }

// NodePools returns copies of every NodePool, by name.
func (c *Cluster) NodePools() []*karpv1.NodePool { return c.nodePools.list() }

// UpdatePDB records the PodDisruptionBudget (a copy).
func (c *Cluster) UpdatePDB(pdb *policyv1.PodDisruptionBudget) { c.pdbs.update(pdb) }

// DeletePDB forgets the PodDisruptionBudget.
func (c *Cluster) DeletePDB(key types.NamespacedName) { c.pdbs.delete(key) }

// PDBs returns copies of every PodDisruptionBudget, in key order.
func (c *Cluster) PDBs() []*policyv1.PodDisruptionBudget { return c.pdbs.list() }

// MarkForDeletion marks the StateNodes with the given IDs: they lend no
// capacity and their reschedulable pods are placed again.
func (c *Cluster) MarkForDeletion(ids ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		c.marked[id] = true
	}
}

// HoldDisruptionStart tells the view that the disruption controller is
// about to taint these StateNodes karpenter.sh/disrupted and launch their
// replacements. Until ReleaseDisruptionStart, the taint alone does not
// mark them for deletion: otherwise the provisioner, seeing the taint
// before the replacements exist and the pods are nominated to them,
// would launch capacity for the same pods a second time. The controller
// marks them itself (MarkForDeletion) once the replacements are there,
// and releases the hold after that, or after the start failed.
func (c *Cluster) HoldDisruptionStart(ids ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		c.starting[id]++
	}
}

// ReleaseDisruptionStart ends a HoldDisruptionStart.
func (c *Cluster) ReleaseDisruptionStart(ids ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if c.starting[id]--; c.starting[id] <= 0 {
			delete(c.starting, id)
		}
	}
}

// DisruptionStarting reports whether the disruption of any of the
// StateNodes is being started (HoldDisruptionStart): their replacements
// may not exist yet nor the nodes be marked, so a count of the nodes that
// stay is not to be trusted until the hold ends.
func (c *Cluster) DisruptionStarting(ids ...string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, id := range ids {
		if c.starting[id] > 0 {
			return true
		}
	}
	return false
}

// UnmarkForDeletion clears MarkForDeletion.
func (c *Cluster) UnmarkForDeletion(ids ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		delete(c.marked, id)
	}
}

func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

func (c *Cluster) now() time.Time { return c.clock.Now() }
