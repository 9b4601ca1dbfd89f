package simulation

import (
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// NodeCache remembers what a solve derives from an existing node and its
// pods alone: each pod's requests (LimitRange defaults applied) and the
// resource names its spec mentions, and the node's label requirements.
// The what-ifs of one disruption pass are each a solve over the same
// nodes; sharing a NodeCache, they derive these once per pass instead of
// once per what-if, which at 5,000 nodes was a third of a pass.
//
// It also keeps, per NodePool of the pass, the instance types compatible
// with the NodePool and their resource vectors: every what-if solves over
// the same NodePools, and filtering and converting a large catalog was a
// fifth of the controller's CPU during consolidation.
//
// A NodeCache serves inputs with the same LimitRanges only, and its nodes,
// pods and NodePools must not change while it is in use (the cluster state's
// snapshot gives each pass its own; a solve that changes a node works on
// a copy). It is safe for concurrent use.
type NodeCache struct {
	mu    sync.RWMutex
	pods  map[*corev1.Pod]*podFacts
	nodes map[*Node]scheduling.Requirements
	pools map[poolTypesKey][]*itype
}

// poolTypesKey names one NodePool's compatible instance types under one
// resource index (its names in slot order).
type poolTypesKey struct {
	pool      *NodePool
	resources string
}

// podFacts are what the solver derives from one pod's spec.
type podFacts struct {
	requests corev1.ResourceList
	names    []corev1.ResourceName
}

// NewNodeCache returns an empty NodeCache.
func NewNodeCache() *NodeCache {
	return &NodeCache{pods: map[*corev1.Pod]*podFacts{}, nodes: map[*Node]scheduling.Requirements{}, pools: map[poolTypesKey][]*itype{}}
}

// poolTypes returns the NodePool's compatible instance types under the
// resource index, from the cache when there is one, else built. The
// solver only reads them.
func (c *NodeCache) poolTypes(key poolTypesKey, build func() []*itype) []*itype {
	if c == nil {
		return build()
	}
	c.mu.RLock()
	types, ok := c.pools[key]
	c.mu.RUnlock()
	if ok {
		return types
	}
	types = build()
	c.mu.Lock()
	c.pools[key] = types
	c.mu.Unlock()
	return types
}

// nodeRequirements are the node's labels as requirements, narrowed by its
// in-flight requirements, from the cache when there is one. The solver
// only reads them.
func (c *NodeCache) nodeRequirements(n *Node) scheduling.Requirements {
	if c != nil {
		c.mu.RLock()
		reqs, ok := c.nodes[n]
		c.mu.RUnlock()
		if ok {
			return reqs
		}
	}
	reqs := scheduling.NewLabelRequirements(n.Labels)
	if n.Requirements != nil {
		reqs = reqs.Intersection(n.Requirements)
	}
	if c != nil {
		c.mu.Lock()
		c.nodes[n] = reqs
		c.mu.Unlock()
	}
	return reqs
}

// facts returns the pod's facts, derived on first use.
func (c *NodeCache) facts(p *corev1.Pod, limitRanges []corev1.LimitRange) *podFacts {
	c.mu.RLock()
	f, ok := c.pods[p]
	c.mu.RUnlock()
	if ok {
		return f
	}
	f = &podFacts{requests: podRequests(p, limitRanges)}
	names := corev1.ResourceList{}
	addSpecResourceNames(names, &p.Spec)
	for n := range names {
		f.names = append(f.names, n)
	}
	c.mu.Lock()
	c.pods[p] = f
	c.mu.Unlock()
	return f
}

// requests are the pod's requests with LimitRange defaults applied, from
// the cache when there is one.
func (c *NodeCache) requests(p *corev1.Pod, limitRanges []corev1.LimitRange) corev1.ResourceList {
	if c == nil {
		return podRequests(p, limitRanges)
	}
	return c.facts(p, limitRanges).requests
}

func podRequests(p *corev1.Pod, limitRanges []corev1.LimitRange) corev1.ResourceList {
	return scheduling.PodRequests(scheduling.WithLimitRangeDefaults(p, limitRanges))
}

// addSpecResourceNames adds every resource the pod spec's containers
// request or limit, and its overhead, to names.
func addSpecResourceNames(names corev1.ResourceList, spec *corev1.PodSpec) {
	for _, list := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for i := range list {
			addNames(names, list[i].Resources.Requests)
			addNames(names, list[i].Resources.Limits)
		}
	}
	addNames(names, spec.Overhead)
}

// addNames adds the names of l to names; most are there already, and a
// lookup costs less than writing the quantity again.
func addNames(names, l corev1.ResourceList) {
	for n, q := range l {
		if _, ok := names[n]; !ok {
			names[n] = q
		}
	}
}
