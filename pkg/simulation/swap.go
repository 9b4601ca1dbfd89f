package simulation

import (
	"math"
	"slices"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// Swapping pods between NodeClaims so that one of them gets cheaper.
//
// Placing pods one at a time grows whichever NodeClaim costs least to
// grow, which does not look at the mix of resources: a NodeClaim can end
// up with its memory full and half its cpu idle while another has the
// opposite, and neither empties (emptyClaims) nor shrinks by moving pods
// into zero-cost room (shrinkClaims) because no NodeClaim has room for a
// whole pod of the heavy kind. Exchanging a memory-heavy pod of the first
// for a cpu-heavy pod of the second fixes both: the first drops to a
// cheaper type, the second keeps its own (or changes it for less than the
// first saves). With one pod per node forced by hostname anti-affinity
// (BenchmarkSolveDiverse), this is where most of the gap to the
// fractional lower bound was.
//
// swapClaims takes the NodeClaims dearest first. For each pod p of a
// NodeClaim X that may move (move.go) and without which X would fit a
// cheaper type, it looks at up to swapProbe other NodeClaims Y of the
// NodePool, those with the most room in the resource p takes the largest
// share of first, and moves p to Y alone (Y grows by less than X saves)
// or in exchange for a pod q of Y that fits X's room on some cheaper type
// while p fits Y's room once q leaves; it keeps the move when X and Y
// then cost less together, X less than before. Each move is checked as
// in emptyClaims: node requirements (the entries narrow), topology
// (canJoin, against the counts the other move of the pair leaves),
// resources with daemon overhead, DaemonSet host ports, NodePool limits
// for both new types together. Pods with host ports and NodePools with
// minValues or a binding limit are left alone. The total price only
// falls; the passes are deterministic (NodeClaims by price, then id) and
// bounded by swapRounds.
const (
	swapProbe  = 12 // NodeClaims tried as partners per pod
	swapRounds = 2  // passes over the NodeClaims
)

// swapClaims runs the swap passes over the live NodeClaims.
func (s *solver) swapClaims(live []*target) {
	if len(live) < 2 || s.noSwap {
		return
	}
	n := s.resources.Len()
	sw := &swapper{s: s, newUsed: make(scheduling.Vector, n), partnerUsed: make(scheduling.Vector, n),
		base: make(scheduling.Vector, n), room: make(scheduling.Vector, n)}
	for round := 0; round < swapRounds; round++ {
		byRoom := make([][]*target, s.resources.Len())
		changed := false
		for _, x := range dearestFirst(live) {
			if !sw.eligible(x) || x.entry.order[0] == x.cur {
				continue
			}
			for sw.improve(x, live, byRoom) {
				changed = true
			}
		}
		if !changed {
			return
		}
	}
}

// swapper holds the scratch state of one swapClaims call.
type swapper struct {
	s           *solver
	newUsed     scheduling.Vector
	partnerUsed scheduling.Vector
	// base is, per resource, the largest allocatable less daemon overhead
	// and x's requests over the types of x's entry cheaper than its
	// current one (cheaperRoom): negative where x must shed requests to
	// fit any of them.
	base scheduling.Vector
	// room is base plus the requests of the pod leaving x: the most a pod
	// joining x in exchange can request for x to fit some cheaper type.
	room scheduling.Vector
}

// cheaperRoom sets sw.base for x.
func (sw *swapper) cheaperRoom(x *target) {
	s := sw.s
	e := x.entry
	for k := range sw.base {
		sw.base[k] = math.MinInt64 / 4
	}
	for _, i := range e.order {
		if noDearer(x.price(), e.price[i]) {
			break
		}
		over := s.overhead(e, i)
		for k, a := range e.pool.types[i].alloc {
			sw.base[k] = max(sw.base[k], a-over[k]-x.used[k])
		}
	}
}

// eligible reports whether t takes part in swaps at all.
func (sw *swapper) eligible(t *target) bool {
	p := t.entry.pool
	return !t.gone() && len(t.pods) > 0 && len(p.minValues) == 0 && !p.binding
}

// dearestFirst returns the NodeClaims by price, dearest first, then by id.
func dearestFirst(claims []*target) []*target {
	order := cheapestFirst(claims)
	slices.Reverse(order)
	return order
}

// improve makes one swap that makes x cheaper, if it finds one.
func (sw *swapper) improve(x *target, live []*target, byRoom [][]*target) bool {
	s := sw.s
	sw.cheaperRoom(x)
	for _, p := range x.pods {
		if len(p.class.ports) > 0 || !sw.mayFree(p) || !s.canLeave(p) {
			continue
		}
		copy(sw.newUsed, x.used)
		sw.newUsed.Sub(p.class.requests)
		alone := s.cheaperType(x, x.entry, sw.newUsed, x.ports)
		if alone < 0 {
			continue // even alone, p's leaving does not make x cheaper
		}
		copy(sw.room, sw.base)
		sw.room.Add(p.class.requests)
		k := dominant(p.class.requests, x)
		if byRoom[k] == nil {
			byRoom[k] = byFreeDesc(live, k)
		}
		tried := 0
		for _, y := range byRoom[k] {
			if tried >= swapProbe {
				break
			}
			if y == x || y.entry.pool != x.entry.pool || !sw.eligible(y) {
				continue
			}
			tried++
			if sw.trySwap(x, p, alone, y) {
				return true
			}
		}
	}
	return false
}

// mayFree reports whether x without p could fit the largest room of its
// cheaper types (sw.base): a quick necessary condition for p's leaving to
// make x cheaper.
func (sw *swapper) mayFree(p *podInfo) bool {
	for k, b := range sw.base {
		if p.class.requests[k]+b < 0 {
			return false
		}
	}
	return true
}

// trySwap moves p from x to y, alone or in exchange for a pod q of y,
// when the two NodeClaims then cost less together, x less than before.
// Without p, x fits type alone.
func (sw *swapper) trySwap(x *target, p *podInfo, alone int, y *target) bool {
	s := sw.s
	if mi := s.moveInfoOf(p.variant); !mi.free && !s.sameDomains(mi, x, y) {
		return false
	}
	ey := s.compatEntry(y.entry, p.variant)
	if ey == nil {
		return false
	}
	// Hostname topology is checked last: it costs more than the resource
	// checks.
	joins := 0 // 1: p may join y, -1: it may not
	mayJoin := func() bool {
		if joins == 0 {
			joins = -1
			if s.canJoin(p, x, y) {
				joins = 1
			}
		}
		return joins > 0
	}
	before := x.price() + y.price()
	// 1. p alone: y may grow by less than x saves. y's type is the
	// cheapest its pods fit, so with p no cheaper one does either.
	copy(sw.partnerUsed, y.used)
	sw.partnerUsed.Add(p.class.requests)
	start := 0
	if ey.ok.has(y.cur) {
		start = ey.rank[y.cur]
	}
	if toY := s.typeWithin(y, ey, start, sw.partnerUsed, before-x.entry.price[alone]); toY >= 0 && sw.limitsAllow(x, alone, y, toY) {
		if !mayJoin() {
			return false
		}
		s.moveCounts(p, x, y)
		sw.apply(x, p, x.entry, alone, y, nil, ey, toY)
		return true
	}
	// 2. In exchange for a pod q of y that fits into x's room on some
	// cheaper type (sw.room, a quick necessary bound) instead of p, and
	// frees enough of y for p: none can when the two bounds cross.
	for k, r := range p.class.requests {
		if r-y.free[k] > sw.room[k] {
			return false
		}
	}
	for _, q := range y.pods {
		if len(q.class.ports) > 0 || !q.class.requests.Fits(sw.room) || !sw.fitsFor(p, q, y) || !s.canLeave(q) {
			continue
		}
		ex := s.compatEntry(x.entry, q.variant)
		if ex == nil {
			continue
		}
		copy(sw.newUsed, x.used)
		sw.newUsed.Sub(p.class.requests)
		sw.newUsed.Add(q.class.requests)
		toX := s.cheaperType(x, ex, sw.newUsed, x.ports)
		if toX < 0 {
			continue
		}
		copy(sw.partnerUsed, y.used)
		sw.partnerUsed.Sub(q.class.requests)
		sw.partnerUsed.Add(p.class.requests)
		toY := s.typeWithin(y, ey, 0, sw.partnerUsed, before-ex.price[toX])
		if toY < 0 || !sw.limitsAllow(x, toX, y, toY) {
			continue
		}
		if !mayJoin() {
			return false
		}
		// Move p first, then check q against the counts that leaves.
		s.moveCounts(p, x, y)
		if !s.canJoin(q, y, x) {
			s.moveCounts(p, y, x)
			continue
		}
		s.moveCounts(q, y, x)
		sw.apply(x, p, ex, toX, y, q, ey, toY)
		return true
	}
	return false
}

// fitsFor reports whether p fits y's room on its current type once q
// leaves it.
func (sw *swapper) fitsFor(p, q *podInfo, y *target) bool {
	for k, r := range p.class.requests {
		if r > y.free[k]+q.class.requests[k] {
			return false
		}
	}
	return true
}

// limitsAllow reports whether x on type toX and y on type toY keep their
// NodePool within its limits.
func (sw *swapper) limitsAllow(x *target, toX int, y *target, toY int) bool {
	pool := x.entry.pool
	if !pool.hasLimits {
		return true
	}
	for k, l := range pool.limits {
		if l < 0 {
			continue
		}
		delta := pool.types[toX].capacity[k] - pool.types[x.cur].capacity[k] + pool.types[toY].capacity[k] - pool.types[y.cur].capacity[k]
		if pool.used[k]+delta > l {
			return false
		}
	}
	return true
}

// apply moves p from x to y and q (nil: none) from y to x, and gives x
// and y their new entries and types.
func (sw *swapper) apply(x *target, p *podInfo, ex *entry, toX int, y *target, q *podInfo, ey *entry, toY int) {
	s := sw.s
	pool := x.entry.pool
	posX := s.freePos(x)
	i := slices.Index(x.pods, p)
	if q != nil {
		x.pods[i] = q
		x.used.Add(q.class.requests)
		q.at = x
	} else {
		x.pods = slices.Delete(x.pods, i, i+1)
	}
	x.used.Sub(p.class.requests)
	pool.used.Sub(pool.types[x.cur].capacity)
	pool.used.Add(pool.types[toX].capacity)
	x.entry, x.cur = ex, toX
	s.refreshFree(x)
	s.reindex(x, posX)

	posY := s.freePos(y)
	if q != nil {
		y.pods[slices.Index(y.pods, q)] = p
		y.used.Sub(q.class.requests)
	} else {
		y.pods = append(y.pods, p)
	}
	y.used.Add(p.class.requests)
	p.at = y
	pool.used.Sub(pool.types[y.cur].capacity)
	pool.used.Add(pool.types[toY].capacity)
	y.entry, y.cur = ey, toY
	s.refreshFree(y)
	s.reindex(y, posY)
}

// typeWithin is the cheapest type of e from position start of its price
// order that holds used (with its daemon overhead and t's host ports)
// priced below budget by more than priceTolerance; -1 when there is none.
func (s *solver) typeWithin(t *target, e *entry, start int, used scheduling.Vector, budget float64) int {
	zero := s.zero()
	for _, i := range e.order[start:] {
		if noDearer(budget, e.price[i]) {
			return -1
		}
		if !s.fitsAt(e, i, used, zero) {
			continue
		}
		if _, conflict := scheduling.HostPortConflict(e.ports[i], t.ports); !conflict {
			return i
		}
	}
	return -1
}

// cheaperType is the cheapest type of e, priced below t's current one by
// more than priceTolerance, that holds used with its daemon overhead
// within the pool's limits and whose DaemonSets' host ports leave ports
// free; -1 when there is none.
func (s *solver) cheaperType(t *target, e *entry, used scheduling.Vector, ports []scheduling.HostPort) int {
	zero := s.zero()
	for _, i := range e.order {
		if noDearer(t.price(), e.price[i]) {
			return -1
		}
		if !s.fitsAt(e, i, used, zero) || !s.limitsAllow(e.pool, e.pool.types[i].capacity, e.pool.types[t.cur].capacity) {
			continue
		}
		if _, conflict := scheduling.HostPortConflict(e.ports[i], ports); !conflict {
			return i
		}
	}
	return -1
}

// dominant is the resource req takes the largest share of on t's type.
func dominant(req scheduling.Vector, t *target) int {
	alloc := t.entry.pool.types[t.cur].alloc
	best, share := scheduling.SlotCPU, -1.0
	for _, k := range []int{scheduling.SlotCPU, scheduling.SlotMemory} {
		if alloc[k] <= 0 {
			continue
		}
		if f := float64(req[k]) / float64(alloc[k]); f > share {
			best, share = k, f
		}
	}
	return best
}

// byFreeDesc orders the NodeClaims by free room in resource k, most first.
func byFreeDesc(live []*target, k int) []*target {
	out := slices.Clone(live)
	slices.SortStableFunc(out, func(a, b *target) int {
		switch {
		case a.free[k] > b.free[k]:
			return -1
		case a.free[k] < b.free[k]:
			return 1
		}
		return a.id - b.id
	})
	return out
}
