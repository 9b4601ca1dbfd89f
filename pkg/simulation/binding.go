package simulation

import (
	"sort"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// Binding NodePool limits.
//
// A NodePool limit caps a costly or scarce pool (arm, GPU, reserved
// capacity). While it is far off, the solver picks instance types by price
// alone. Once it binds, every unit of the limited resource should hold as
// many pods as it can, and pods that fit elsewhere should not take it from
// pods that fit nowhere else. Price-first placement does neither: 2-cpu pods
// open 8-vCPU nodes that hold three of them (7.9 cpu allocatable), so a
// quarter of each node's share of the limit holds nothing, and pods with
// other NodePools to go to fill the rest.
//
// So when a first solve leaves pods pending because a limit refused them,
// Solve tries again with the strategies below and keeps whichever result
// leaves the fewest pods pending, then costs least:
//   - least flexible first: pods that only one NodePool can take are placed
//     before pods that several can (sortLeastFlexibleFirst);
//   - the same, with the refusing NodePools solved limit-efficiently: a new
//     NodeClaim there takes the instance type that would hold the most of
//     the pods only that pool can take per unit of its limits (efficientFit),
//     and once every pod is placed each of its NodeClaims is refitted to the
//     cheapest type that still holds its pods without using more of a limit
//     (refit), which frees room for the pods still pending;
//   - the same, placing the pods only a binding pool can take smallest
//     first: under a limit, more small pods fit than large ones.
//
// Whatever the strategy, compaction's released room is used again before
// the solve returns (compactAndRetry), and the NodeClaims a solve returns
// hold, with the largest type each lists, exactly the capacity its limit
// accounting counted (finish hands out only the room no pending pod was
// refused for).

// strategy is one way to solve: the pod order and the NodePools solved
// limit-efficiently.
type strategy struct {
	order   func(*solver, []*podInfo)
	binding map[string]bool
}

// bindingStrategies are what Solve tries after a solve that left pods
// pending with some NodePool limited: least flexible first and, when the
// limits of the NodePools bound refused pods, the limit-efficient ones.
func bindingStrategies(bound map[string]bool) []strategy {
	out := []strategy{{order: (*solver).sortLeastFlexibleFirst}}
	if len(bound) > 0 {
		out = append(out, strategy{order: (*solver).sortLeastFlexibleFirst, binding: bound},
			strategy{order: (*solver).sortConstrainedSmallestFirst, binding: bound})
	}
	return out
}

// setBinding marks the named NodePools (those with limits) limit-efficient.
func (s *solver) setBinding(names map[string]bool) {
	for _, p := range s.pools {
		p.binding = names[p.name] && (p.hasLimits || p.nodeLimit >= 0)
	}
}

// boundPools names the NodePools whose limits refused a pod during the
// solve.
func (s *solver) boundPools() map[string]bool {
	var out map[string]bool
	for _, p := range s.pools {
		if p.everRefused {
			if out == nil {
				out = map[string]bool{}
			}
			out[p.name] = true
		}
	}
	return out
}

// refuse notes that p's limits kept a pod out.
func (p *pool) refuse() {
	p.refused = true
	p.everRefused = true
}

// poolsOf counts the NodePools some variant of c can use, and notes the one
// when there is exactly one.
func (s *solver) poolsOf(c *class) int {
	if c.poolsKnown {
		return c.pools
	}
	c.poolsKnown = true
	c.onlyPool = -1
	for i := range s.pools {
		for _, v := range c.variants {
			if s.poolFor(v, i).verdict == compatible {
				c.pools++
				c.onlyPool = i
				break
			}
		}
	}
	if c.pools != 1 {
		c.onlyPool = -1
	}
	return c.pools
}

// onlyBinding reports whether the only NodePool c can use is binding.
func (s *solver) onlyBinding(c *class) bool {
	return s.poolsOf(c) == 1 && s.pools[c.onlyPool].binding
}

// sortConstrainedSmallestFirst is sortLeastFlexibleFirst with the pods that
// only a binding NodePool can take placed smallest first.
func (s *solver) sortConstrainedSmallestFirst(pods []*podInfo) {
	s.sortLeastFlexibleFirst(pods)
	sort.SliceStable(pods, func(a, b int) bool {
		ca, cb := pods[a].class, pods[b].class
		if ka, kb := s.poolsOf(ca), s.poolsOf(cb); ka != kb {
			return ka < kb
		}
		ba, bb := s.onlyBinding(ca), s.onlyBinding(cb)
		if ba != bb {
			return ba
		}
		return ba && ca.size < cb.size
	})
}

// queue counts the pods to place per class and lists, per binding
// NodePool, the classes only it can take, in placement order.
func (s *solver) queue(pods []*podInfo) {
	binding := false
	for _, p := range s.pools {
		binding = binding || p.binding
	}
	seen := map[*class]bool{}
	for _, pi := range pods {
		c := pi.class
		c.waiting++
		if !binding || seen[c] {
			continue
		}
		seen[c] = true
		if s.onlyBinding(c) {
			p := s.pools[c.onlyPool]
			p.constrained = append(p.constrained, c)
		}
	}
}

// scoreClasses bounds how many constrained classes efficientFit looks at
// per instance type: enough to see what fills a node.
const scoreClasses = 64

// waitingConstrained reports whether pods only p can take are still
// waiting, besides one of class c.
func (p *pool) waitingConstrained(c *class) bool {
	for _, k := range p.constrained {
		if n := k.waiting; n > 1 || n == 1 && k != c {
			return true
		}
	}
	return false
}

// efficientFit is cheapestFit for a new NodeClaim of a binding NodePool:
// of the types that hold the pod within the limits, the one that would hold
// the most pods per unit of the limits (limitScore), the cheapest on ties.
// With no pod left that only this NodePool can take, it is cheapestFit.
func (s *solver) efficientFit(e *entry, v *variant) int {
	p := e.pool
	if !p.waitingConstrained(v.class) {
		return s.cheapestFit(e, nil, v)
	}
	zero, req := s.zero(), v.class.requests
	if s.limitExcludes(p, zero, req, nil) {
		return -1
	}
	best, bestScore := -1, 0.0
	for _, i := range e.order {
		if !s.fitsAt(e, i, zero, req) || !s.portsFree(e, i, v) || !s.limitsAllow(p, p.types[i].capacity, nil) {
			continue
		}
		if len(p.minValues) > 0 && s.in.Options.MinValuesPolicy != MinValuesPolicyBestEffort && !s.minValuesOK(e, zero, req) {
			return -1
		}
		if score := s.limitScore(e, i, v); best < 0 || score > bestScore*(1+priceTolerance) {
			best, bestScore = i, score
		}
	}
	return best
}

// limitScore estimates how many pods a new NodeClaim of e on type i would
// hold per unit of its NodePool's limits: the pod of v, then the waiting
// pods only this NodePool can take, in placement order, as many of each
// class as still fit (one where a hostname constraint allows no more).
func (s *solver) limitScore(e *entry, i int, v *variant) float64 {
	p := e.pool
	it := p.types[i]
	over := s.overhead(e, i)
	free := make(scheduling.Vector, len(it.alloc))
	for k := range free {
		free[k] = it.alloc[k] - over[k] - v.class.requests[k]
	}
	count := int64(1)
	for n, c := range p.constrained {
		if n >= scoreClasses {
			break
		}
		want := int64(c.waiting)
		if c == v.class {
			want--
		}
		if want <= 0 {
			continue
		}
		if ce := s.compatEntry(e, c.variants[0]); ce == nil || !ce.ok.has(i) {
			continue
		}
		k := fitCount(free, c.requests, want)
		if k > 1 && hostnameBound(c.variants[0]) {
			k = 1
		}
		for r := range free {
			free[r] -= k * c.requests[r]
		}
		count += k
	}
	return float64(count) / s.limitCost(p, i)
}

// fitCount is how many of n pods of requests req fit in free.
func fitCount(free, req scheduling.Vector, n int64) int64 {
	for k, x := range req {
		if x <= 0 {
			continue
		}
		if free[k] < x {
			return 0
		}
		n = min(n, free[k]/x)
	}
	return n
}

// hostnameBound reports whether v has a hostname anti-affinity or spread
// constraint, which caps its pods per node.
func hostnameBound(v *variant) bool {
	for _, c := range v.constraints {
		if c.group.hostname && c.kind != kindAffinity {
			return true
		}
	}
	return false
}

// limitCost is the share of p's limits a node of type i takes: its
// capacity of each limited resource over the limit, plus one node over the
// node limit.
func (s *solver) limitCost(p *pool, i int) float64 {
	cost := 0.0
	for k, l := range p.limits {
		if l >= 0 {
			cost += float64(p.types[i].capacity[k]) / float64(max(l, 1))
		}
	}
	if p.nodeLimit >= 0 {
		cost += 1 / float64(max(p.nodeLimit, 1))
	}
	return max(cost, 1e-12)
}

// noMoreLimited reports whether type i takes no more of any of p's limited
// resources than type j.
func (p *pool) noMoreLimited(i, j int) bool {
	for k, l := range p.limits {
		if l >= 0 && p.types[i].capacity[k] > p.types[j].capacity[k] {
			return false
		}
	}
	return true
}

// refit moves each NodeClaim of a binding NodePool to the cheapest type of
// its entry that still holds its pods and takes no more of a limit: a
// NodeClaim opened on the most limit-efficient type may end less full.
// NodeClaims with minValues are left alone, as shrinkClaims leaves them.
func (s *solver) refit(live []*target) {
	zero := s.zero()
	for _, t := range live {
		p := t.entry.pool
		if t.gone() || len(t.pods) == 0 || !p.binding || len(p.minValues) > 0 {
			continue
		}
		e := t.entry
		for _, i := range e.order[:e.rank[t.cur]] {
			if !p.noMoreLimited(i, t.cur) || !s.fitsAt(e, i, t.used, zero) {
				continue
			}
			if _, conflict := scheduling.HostPortConflict(e.ports[i], t.ports); conflict {
				continue
			}
			pos := s.freePos(t)
			p.used.Sub(p.types[t.cur].capacity)
			p.used.Add(p.types[i].capacity)
			t.cur = i
			s.refreshFree(t)
			s.reindex(t, pos)
			break
		}
	}
}

// usage is a NodePool's limit usage at one moment.
type usage struct {
	used  scheduling.Vector
	nodes int64
}

// limitUsage records the usage of every NodePool.
func (s *solver) limitUsage() []usage {
	out := make([]usage, len(s.pools))
	for i, p := range s.pools {
		out[i] = usage{used: p.used.Clone(), nodes: p.nodesUsed}
	}
	return out
}

// released reports whether some NodePool now uses less of one of its
// limits than it did at before.
func (s *solver) released(before []usage) bool {
	for i, p := range s.pools {
		if p.nodeLimit >= 0 && p.nodesUsed < before[i].nodes {
			return true
		}
		for k, l := range p.limits {
			if l >= 0 && p.used[k] < before[i].used[k] {
				return true
			}
		}
	}
	return false
}
