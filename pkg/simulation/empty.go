package simulation

import (
	"slices"
	"sort"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// Emptying NodeClaims into room other NodeClaims already have.
//
// Merging whole NodeClaims (merge.go) builds large nodes but leaves holes
// a whole NodeClaim does not fit: eight 3.5-cpu pods on a 32-cpu node
// leave room for four small pods, which sit on nodes of their own.
// emptyClaims takes the NodeClaims cheapest first and moves each of their
// pods to the tightest other NodeClaim of its NodePool that holds it on
// its current instance type at no higher price; when every pod of a
// NodeClaim finds a place, the NodeClaim is dropped (its whole price
// saved), otherwise its pods stay where they were.
//
// Only pods whose topology constraints the move keeps move (move.go): a
// pod free of topology ties always can; one that topology groups count or
// that has spread or pod (anti-)affinity terms only between NodeClaims in
// the same zone-like domains, and where every hostname check replayed in
// Result.Order still passes. Node requirements, taints, resources with the
// receiving node's daemon overhead, host ports, limits (the receiving
// instance type is unchanged) and minValues are checked as at placement.
const emptyProbe = 16 // NodeClaims with enough free cpu tried per pod

// move is a pod moved onto a NodeClaim, with what undoes it.
type move struct {
	pod      *podInfo
	from     *target
	to       *target
	oldEntry *entry
	ports    int // len(to.ports) before
}

// emptyClaims drops the NodeClaims in live whose pods all fit elsewhere.
func (s *solver) emptyClaims(live []*target) {
	s.claimsByFree = append(s.claimsByFree[:0], live...)
	sort.SliceStable(s.claimsByFree, func(i, j int) bool { return freeLess(s.claimsByFree[i], s.claimsByFree[j]) })
	var moves []move
	for _, t := range cheapestFirst(live) {
		if !s.movable(t) {
			continue
		}
		moves = moves[:0]
		ok := true
		for _, pi := range t.pods {
			m, found := s.moveOut(pi, t)
			if !found {
				ok = false
				break
			}
			moves = append(moves, m)
		}
		if !ok {
			for i := len(moves) - 1; i >= 0; i-- {
				s.undoMove(moves[i])
			}
			continue
		}
		s.drop(t, moves)
	}
}

// cheapestFirst returns the NodeClaims by price, then by id.
func cheapestFirst(claims []*target) []*target {
	order := slices.Clone(claims)
	slices.SortStableFunc(order, func(a, b *target) int {
		switch {
		case a.price() < b.price():
			return -1
		case a.price() > b.price():
			return 1
		}
		return a.id - b.id
	})
	return order
}

// movable reports whether every pod of t may move (move.go).
func (s *solver) movable(t *target) bool {
	for _, pi := range t.pods {
		if !s.canLeave(pi) {
			return false
		}
	}
	return true
}

// moveOut puts pi on the tightest other NodeClaim of the same NodePool
// (pods stay in the NodePool their weight chose) that takes it without
// changing instance type or raising its price.
func (s *solver) moveOut(pi *podInfo, from *target) (move, bool) {
	req := pi.class.requests
	lo := sort.Search(len(s.claimsByFree), func(i int) bool {
		return s.claimsByFree[i].free[scheduling.SlotCPU] >= req[scheduling.SlotCPU]
	})
	tried := 0
	for _, t := range s.claimsByFree[lo:] {
		if tried >= emptyProbe {
			break
		}
		if t == from || t.entry.pool != from.entry.pool || !req.Fits(t.free) {
			continue
		}
		tried++
		if !s.canJoin(pi, from, t) {
			continue
		}
		if e := s.takes(pi.variant, t); e != nil {
			m := move{pod: pi, from: from, to: t, oldEntry: t.entry, ports: len(t.ports)}
			s.moveCounts(pi, from, t)
			pos := s.freePos(t)
			t.entry = e
			t.used.Add(req)
			t.ports = append(t.ports, pi.class.ports...)
			t.pods = append(t.pods, pi)
			s.refreshFree(t)
			s.reindex(t, pos)
			return m, true
		}
	}
	return move{}, false
}

// takes returns t's entry after adding a pod of v on t's current instance
// type, nil when that is not possible at the same or a lower price.
func (s *solver) takes(v *variant, t *target) *entry {
	e := s.compatEntry(t.entry, v)
	if e == nil || !e.ok.has(t.cur) || !noDearer(e.price[t.cur], t.price()) || !s.fitsAt(e, t.cur, t.used, v.class.requests) {
		return nil
	}
	if !s.portsFree(e, t.cur, v) {
		return nil
	}
	if len(v.class.ports) > 0 {
		if _, conflict := scheduling.HostPortConflict(t.ports, v.class.ports); conflict {
			return nil
		}
	}
	if e != t.entry && len(e.ports[t.cur]) > 0 {
		if _, conflict := scheduling.HostPortConflict(t.ports, e.ports[t.cur]); conflict {
			return nil
		}
	}
	if p := e.pool; len(p.minValues) > 0 && !s.minValuesOK(e, t.used, v.class.requests) {
		return nil
	}
	return e
}

// undoMove takes a moved pod back off its new NodeClaim.
func (s *solver) undoMove(m move) {
	t := m.to
	s.moveCounts(m.pod, t, m.from)
	pos := s.freePos(t)
	t.entry = m.oldEntry
	t.used.Sub(m.pod.class.requests)
	t.ports = t.ports[:m.ports]
	t.pods = t.pods[:len(t.pods)-1]
	s.refreshFree(t)
	s.reindex(t, pos)
}

// drop removes an emptied NodeClaim whose pods moved as listed.
func (s *solver) drop(t *target, moves []move) {
	for _, m := range moves {
		m.pod.at = m.to
	}
	p := t.entry.pool
	p.used.Sub(p.types[t.cur].capacity)
	p.nodesUsed--
	pos := s.freePos(t)
	s.claimsByFree = slices.Delete(s.claimsByFree, pos, pos+1)
	t.pods, t.ports = nil, nil
	t.dropped = true
}
