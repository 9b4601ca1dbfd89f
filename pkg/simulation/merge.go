package simulation

import (
	"slices"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// Merging NodeClaims after placement.
//
// Placing pods one at a time, largest first, decides on marginal cost: when
// prices are (nearly) linear in cpu and memory, a pod on a fresh small node
// costs the same as growing a node, and the batch ends up as many small
// nodes. That costs operators in ways the price list does not show: more
// launches, per-node DaemonSets and kube-reserved, IP addresses, slower
// scale-out. So once every pod is placed, mergeClaims folds pairs of new
// NodeClaims into one NodeClaim whose cheapest instance type costs no more
// than the two did (ties within priceTolerance count as equal), as long as
// every constraint still holds on the merged node.
//
// What a merge keeps intact:
//   - Resources: the pods of both plus the merged node's own daemon
//     overhead fit the chosen type; host ports (pods' and DaemonSets') do
//     not collide.
//   - Requirements: the merged requirements are the intersection of both,
//     so every pod's requirements still hold and a domain a pod fixed
//     (zone, capacity type, any non-hostname topology key) stays fixed:
//     zone-like topology counts do not move.
//   - Hostname topology: a pod's hostname spread counts both nodes' matching
//     pods against maxSkew; its hostname anti-affinity (required, or
//     preferred and honoured at its level) and the anti-affinity of pods
//     it would join must see no matching pod on the other node.
//   - NodePool limits (the new capacity replaces both) and minValues.
//
// It is deterministic (NodeClaims in price order, then creation order) and
// bounded: at most mergeRounds passes, each trying every NodeClaim against
// the next mergeWindow NodeClaims of its NodePool.
const (
	// mergeWindow is how many following NodeClaims (by price) each
	// NodeClaim tries to merge with per pass.
	mergeWindow = 8
	// mergeRounds bounds the passes; each pass can halve the NodeClaims of
	// a uniform workload (two nodes into one twice the size).
	mergeRounds = 12
)

// priceTolerance is the relative difference under which two prices count
// as equal: offering prices are floats, and on a linear price list "twice
// the size" can come out a few ulps dearer than "two of them".
const priceTolerance = 1e-9

// noDearer reports whether price is at most budget, within priceTolerance.
func noDearer(price, budget float64) bool { return price <= budget+priceTolerance*budget }

// merger holds the scratch state of one mergeClaims call.
type merger struct {
	s        *solver
	maxAlloc map[*pool]scheduling.Vector
	entries  map[[2]int]*entry // merged entry by the two entries' ids (nil: incompatible)
	seenVar  []int             // by variant id: stamp of the last check that saw it
	seenGrp  []int             // by group id: stamp of the last count move that saw it
	stamp    int
	sum      scheduling.Vector
	oldCap   scheduling.Vector
}

// compact reduces the new NodeClaims once every pod is placed: merge them
// pairwise, empty the cheapest into the room left on others, then shrink
// those whose pods partly fit elsewhere. No step raises the cost. The solver's placement indexes (eligibility lists,
// pins) are not maintained past this point.
func (s *solver) compact() {
	live := make([]*target, 0, len(s.claims))
	for _, t := range s.claims {
		if len(t.pods) > 0 {
			live = append(live, t)
		}
	}
	if len(live) >= 2 {
		live = s.mergeClaims(live)
		s.emptyClaims(live)
		s.shrinkClaims(live)
		s.swapClaims(live)
		s.shrinkClaims(live) // swaps leave room that lets more pods move
	}
	s.refit(live)
}

// mergeClaims folds the live NodeClaims pairwise while that costs no more
// and returns the ones left.
func (s *solver) mergeClaims(live []*target) []*target {
	m := &merger{s: s, maxAlloc: map[*pool]scheduling.Vector{}, entries: map[[2]int]*entry{},
		seenVar: make([]int, len(s.variants)), seenGrp: make([]int, len(s.topology.groups)),
		sum: make(scheduling.Vector, s.resources.Len()), oldCap: make(scheduling.Vector, s.resources.Len())}
	for round := 0; round < mergeRounds && len(live) > 1; round++ {
		slices.SortStableFunc(live, func(a, b *target) int {
			switch {
			case a.entry.pool.index != b.entry.pool.index:
				return a.entry.pool.index - b.entry.pool.index
			case a.price() < b.price():
				return -1
			case a.price() > b.price():
				return 1
			}
			return a.id - b.id
		})
		done := !m.pass(live)
		live = slices.DeleteFunc(live, func(t *target) bool { return t.into != nil })
		if done {
			break
		}
	}
	return live
}

// pass tries each NodeClaim against the next mergeWindow live NodeClaims of
// its pool; a NodeClaim that absorbed another keeps trying.
func (m *merger) pass(live []*target) bool {
	merged := false
	for i, a := range live {
		if a.into != nil {
			continue
		}
		for j, tries := i+1, 0; j < len(live) && tries < mergeWindow; j++ {
			b := live[j]
			if b.into != nil {
				continue
			}
			if b.entry.pool != a.entry.pool {
				break
			}
			tries++
			if survivor := m.try(a, b); survivor != nil {
				merged = true
				if a = survivor; a != live[i] {
					break // a now lives on at b's position and is tried again from there
				}
			}
		}
	}
	return merged
}

// try merges a and b when every constraint holds and the merged NodeClaim
// costs no more than both; it returns the surviving NodeClaim (the older
// one) or nil.
func (m *merger) try(a, b *target) *target {
	p := a.entry.pool
	copy(m.sum, a.used)
	m.sum.Add(b.used)
	if !m.sum.Fits(m.poolMax(p)) {
		return nil
	}
	if _, conflict := scheduling.HostPortConflict(a.ports, b.ports); conflict {
		return nil
	}
	e := m.entry(a.entry, b.entry)
	if e == nil {
		return nil
	}
	cur := m.cheapestType(e, a, b)
	if cur < 0 || !m.hostnameOK(a, b) || !m.hostnameOK(b, a) {
		return nil
	}
	if a.id > b.id {
		a, b = b, a
	}
	m.apply(a, b, e, cur)
	return a
}

// poolMax is the largest allocatable of each resource over the pool's
// types: a quick bound before any type is tried.
func (m *merger) poolMax(p *pool) scheduling.Vector {
	if v, ok := m.maxAlloc[p]; ok {
		return v
	}
	v := make(scheduling.Vector, m.s.resources.Len())
	for _, it := range p.types {
		for k, x := range it.alloc {
			v[k] = max(v[k], x)
		}
	}
	m.maxAlloc[p] = v
	return v
}

// entry is the interned intersection of two entries of one pool, nil when
// they are incompatible or no instance type satisfies both.
func (m *merger) entry(x, y *entry) *entry {
	if x == y {
		return x
	}
	key := [2]int{min(x.id, y.id), max(x.id, y.id)}
	if e, ok := m.entries[key]; ok {
		return e
	}
	var out *entry
	if x.reqs.Compatible(y.reqs, m.s.wellKnown) == nil {
		if e := m.s.entryForIntersection(x.pool, x.reqs, y.reqs); len(e.order) > 0 {
			out = e
		}
	}
	m.entries[key] = out
	return out
}

// cheapestType is the cheapest type of e that holds the pods of a and b
// (m.sum) with its daemon overhead and ports, within the pool's limits and
// minValues, and costs no more than a and b together; -1 if none.
func (m *merger) cheapestType(e *entry, a, b *target) int {
	s := m.s
	p := e.pool
	budget := a.price() + b.price()
	copy(m.oldCap, p.types[a.cur].capacity)
	m.oldCap.Add(p.types[b.cur].capacity)
	for _, i := range e.order {
		if !noDearer(e.price[i], budget) {
			return -1
		}
		if !s.fitsAt(e, i, m.sum, s.zero()) || !s.limitsAllow(p, p.types[i].capacity, m.oldCap) {
			continue
		}
		if p.binding && !m.withinOld(p, i) {
			continue // a binding pool's room goes to pending pods
		}
		if e.ports[i] != nil {
			if _, conflict := scheduling.HostPortConflict(e.ports[i], a.ports); conflict {
				continue
			}
			if _, conflict := scheduling.HostPortConflict(e.ports[i], b.ports); conflict {
				continue
			}
		}
		if len(p.minValues) > 0 && !s.minValuesOK(e, m.sum, s.zero()) {
			return -1
		}
		return i
	}
	return -1
}

// withinOld reports whether type i takes no more of p's limited resources
// than the two NodeClaims it replaces (m.oldCap).
func (m *merger) withinOld(p *pool, i int) bool {
	for k, l := range p.limits {
		if l >= 0 && p.types[i].capacity[k] > m.oldCap[k] {
			return false
		}
	}
	return true
}

// hostnameOK reports whether the pods of from keep their hostname topology
// constraints when the pods of to join their node: spread counts of both
// within maxSkew, no pod of to matched by their anti-affinity, none of them
// matched by an anti-affinity term owned on to.
func (m *merger) hostnameOK(from, to *target) bool {
	m.stamp++
	for _, pi := range from.pods {
		v := pi.variant
		if m.seenVar[v.id] == m.stamp {
			continue
		}
		m.seenVar[v.id] = m.stamp
		for _, c := range v.constraints {
			g := c.group
			if !g.hostname {
				continue
			}
			switch c.kind {
			case kindSpread:
				if g.count(from, noDom)+g.count(to, noDom) > c.maxSkew {
					return false
				}
			case kindAnti:
				if g.count(to, noDom) > 0 {
					return false
				}
			}
		}
		for _, g := range v.class.inverse {
			if g.hostname && g.ownerCount(to, noDom) > 0 {
				return false
			}
		}
	}
	return true
}

// apply moves b's pods onto a, which takes the merged entry and type.
func (m *merger) apply(a, b *target, e *entry, cur int) {
	s := m.s
	p := e.pool
	p.used.Sub(p.types[a.cur].capacity)
	p.used.Sub(p.types[b.cur].capacity)
	p.used.Add(p.types[cur].capacity)
	p.nodesUsed--
	a.entry, a.cur = e, cur
	a.used.Add(b.used)
	a.ports = append(a.ports, b.ports...)
	a.relaxed = a.relaxed || b.relaxed
	m.moveHostCounts(a, b)
	for _, pi := range b.pods {
		pi.at = a
	}
	a.pods = append(a.pods, b.pods...)
	b.pods, b.ports = nil, nil
	b.into = a
	s.refreshFree(a)
}

// moveHostCounts adds b's hostname group counts to a's, so later merges
// of a see its new pods.
func (m *merger) moveHostCounts(a, b *target) {
	m.stamp++
	for _, pi := range b.pods {
		for _, list := range [][]*group{pi.class.counts, pi.class.owns} {
			for _, g := range list {
				if !g.hostname || m.seenGrp[g.id] == m.stamp {
					continue
				}
				m.seenGrp[g.id] = m.stamp
				if b.id < len(g.hostMatch) && g.hostMatch[b.id] > 0 {
					g.hostMatch = grow(g.hostMatch, a.id)
					g.hostMatch[a.id] += g.hostMatch[b.id]
					g.hostMatch[b.id] = 0
				}
				if b.id < len(g.hostOwners) && g.hostOwners[b.id] > 0 {
					g.hostOwners = grow(g.hostOwners, a.id)
					g.hostOwners[a.id] += g.hostOwners[b.id]
					g.hostOwners[b.id] = 0
				}
			}
		}
	}
}
