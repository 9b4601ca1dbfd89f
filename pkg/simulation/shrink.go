package simulation

import (
	"slices"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// Shrinking NodeClaims by moving some of their pods into room other
// NodeClaims already have.
//
// emptyClaims drops a NodeClaim only when all of its pods fit elsewhere.
// A NodeClaim of which only some fit elsewhere may still get cheaper: with
// a DaemonSet taking 1.5 cpu of every node, 24 half-cpu pods on a 16-cpu
// node and 5 on an 8-cpu one cost $0.612/hour on a price list where size
// and price are proportional, while moving four of the five onto the big
// node's spare room leaves one pod that a 4-cpu node holds: $0.510/hour.
// Per-node overhead makes a few large nodes cheaper than many small ones,
// which the placement order alone does not find.
//
// shrinkClaims takes the NodeClaims cheapest first, moves each movable pod
// (as for emptyClaims, move.go) to the tightest other
// NodeClaim of its NodePool that holds it without changing type or price
// (moveOut), and keeps the moves only when the pods left then fit a
// cheaper instance type of the NodeClaim's own entry; otherwise every move
// is undone. NodeClaims with minValues are left alone (their flexibility
// is the point).

// shrinkClaims shrinks the NodeClaims in live that get cheaper once some
// of their pods move elsewhere.
func (s *solver) shrinkClaims(live []*target) {
	var moves []move
	for _, t := range cheapestFirst(live) {
		if len(t.pods) < 2 || len(t.entry.pool.minValues) > 0 || t.entry.order[0] == t.cur {
			continue // a lone pod moves only by emptying; the cheapest type cannot shrink
		}
		moves = moves[:0]
		pos := s.freePos(t)
		s.claimsByFree = slices.Delete(s.claimsByFree, pos, pos+1) // t takes no pod of its own
		left := t.used.Clone()
		var kept []*podInfo
		for _, pi := range t.pods {
			if s.canLeave(pi) {
				if m, found := s.moveOut(pi, t); found {
					moves = append(moves, m)
					left.Sub(pi.class.requests)
					continue
				}
			}
			kept = append(kept, pi)
		}
		to := -1
		if len(moves) > 0 {
			to = s.cheaperFit(t, left, kept)
		}
		if to < 0 {
			for i := len(moves) - 1; i >= 0; i-- {
				s.undoMove(moves[i])
			}
			s.reinsert(t)
			continue
		}
		p := t.entry.pool
		p.used.Sub(p.types[t.cur].capacity)
		p.used.Add(p.types[to].capacity)
		for _, m := range moves {
			m.pod.at = m.to
		}
		t.cur, t.used, t.pods = to, left, kept
		t.ports = t.ports[:0]
		for _, pi := range kept {
			t.ports = append(t.ports, pi.class.ports...)
		}
		s.refreshFree(t)
		s.reinsert(t)
	}
}

// reinsert puts t back into claimsByFree at its place.
func (s *solver) reinsert(t *target) {
	pos := s.freePos(t)
	s.claimsByFree = append(s.claimsByFree, nil)
	copy(s.claimsByFree[pos+1:], s.claimsByFree[pos:])
	s.claimsByFree[pos] = t
}

// cheaperFit is the cheapest type of t's entry, priced below t's current
// one by more than priceTolerance, that holds used (with its daemon
// overhead) and the host ports of pods; -1 when there is none.
func (s *solver) cheaperFit(t *target, used scheduling.Vector, pods []*podInfo) int {
	e := t.entry
	zero := s.zero()
	for _, i := range e.order {
		if noDearer(t.price(), e.price[i]) {
			break // not cheaper, and order is by price: neither are the rest
		}
		if !s.fitsAt(e, i, used, zero) || !s.limitsAllow(e.pool, e.pool.types[i].capacity, e.pool.types[t.cur].capacity) {
			continue
		}
		s.overhead(e, i)
		conflict := false
		for _, pi := range pods {
			if _, c := scheduling.HostPortConflict(e.ports[i], pi.class.ports); c {
				conflict = true
				break
			}
		}
		if !conflict {
			return i
		}
	}
	return -1
}
