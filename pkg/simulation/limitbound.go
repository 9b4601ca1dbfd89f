package simulation

import (
	"slices"
	"sort"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// capBound indexes a limited pool's instance types by their capacity of one
// limited resource, so one binary search tells which types the remaining
// limit still admits and the most any of them can allocate.
//
// When a limit binds, every pod that ends up pending would otherwise try
// each NodeClaim of the pool against each of its instance types before the
// limit refuses it; the bound refuses such a NodeClaim without the scan.
type capBound struct {
	slot int
	// maxCap is the largest capacity of the slot: while the room left
	// under the limit is at least that, the limit admits every type.
	maxCap int64
	// caps holds the types' capacities of the slot, ascending; it and
	// maxAlloc are built the first time the limit comes that close, so
	// solves whose limits stay far off never sort the types.
	caps []int64
	// maxAlloc holds, per position j of caps, the element-wise maximum
	// allocatable of the types with the j+1 smallest capacities: the
	// vector is maxAlloc[j*width : (j+1)*width].
	maxAlloc []int64
}

// buildBounds prepares a capBound per limited resource of p, and the least
// daemon overhead a NodeClaim of p can carry (requests are never negative
// in practice, but the bound must hold for any input).
func buildBounds(p *pool, width int) {
	p.overFloor = make(scheduling.Vector, width)
	for _, d := range p.daemons {
		for k, x := range d.requests {
			p.overFloor[k] += min(x, 0)
		}
	}
	for slot, l := range p.limits {
		if l < 0 || len(p.types) == 0 {
			continue
		}
		b := capBound{slot: slot, maxCap: p.types[0].capacity[slot]}
		for _, t := range p.types {
			b.maxCap = max(b.maxCap, t.capacity[slot])
		}
		p.bounds = append(p.bounds, b)
	}
}

// index sorts p's types by capacity of the slot and fills caps and
// maxAlloc.
func (b *capBound) index(p *pool, width int) {
	sorted := append([]*itype(nil), p.types...)
	sort.SliceStable(sorted, func(x, y int) bool { return sorted[x].capacity[b.slot] < sorted[y].capacity[b.slot] })
	b.caps = make([]int64, len(sorted))
	b.maxAlloc = make([]int64, len(sorted)*width)
	running := sorted[0].alloc.Clone()
	for j, t := range sorted {
		for k, x := range t.alloc {
			running[k] = max(running[k], x)
		}
		b.caps[j] = t.capacity[b.slot]
		copy(b.maxAlloc[j*width:(j+1)*width], running)
	}
}

// limitExcludes reports whether p's limits leave no instance type that
// could hold used plus req on a NodeClaim whose current capacity is curCap
// (nil: a new NodeClaim). It is a necessary condition only: when it
// returns false, cheapestFit still checks each type.
//
// Why it is exact when it returns true: a type i admitted by the limit on
// slot s has capacity[s] <= limit - pool used + curCap[s], so it lies in the
// prefix of caps up to that room; a type that fits has, in every resource,
// alloc >= used + req + its daemon overhead >= used + req + overFloor. So
// when the largest allocatable of that prefix falls short of used + req +
// overFloor in some resource, cheapestFit would reject every type.
func (s *solver) limitExcludes(p *pool, used, req, curCap scheduling.Vector) bool {
	if !p.hasLimits || s.noLimitBound {
		return false
	}
	width := len(used)
	for i := range p.bounds {
		b := &p.bounds[i]
		room := p.limits[b.slot] - p.used[b.slot]
		if curCap != nil {
			room += curCap[b.slot]
		}
		if room >= b.maxCap {
			// The limit admits every type: nothing to refuse on this
			// resource (the common case, kept to a comparison).
			continue
		}
		if b.caps == nil {
			b.index(p, width)
		}
		j := sort.Search(len(b.caps), func(j int) bool { return b.caps[j] > room })
		if j == 0 {
			return true
		}
		most := b.maxAlloc[(j-1)*width : j*width]
		for k, x := range most {
			if used[k]+req[k]+p.overFloor[k] > x {
				return true
			}
		}
	}
	return false
}

// newFitMemo remembers that no instance type of an entry could hold a pod
// of a variant on a new NodeClaim of a limited pool, and why, under the
// pool usage it was found with.
type newFitMemo struct {
	used      scheduling.Vector
	nodesUsed int64
	reason    scheduling.Reason
}

// newClaimFit is cheapestFit for a new NodeClaim of e and, when no type
// fits, fitReason (cur is then -1). On a limited pool a refusal is remembered per entry and
// variant until the pool's usage changes: under a binding limit every
// pending pod asks again on each pass, and the answer depends only on the
// entry, the variant's requests and host ports, and the pool's usage.
func (s *solver) newClaimFit(e *entry, v *variant) (int, scheduling.Reason) {
	p := e.pool
	memo := p.hasLimits && !s.noLimitBound
	key := [2]int{e.id, v.id}
	if m, ok := s.newFitMemos[key]; memo && ok && m.nodesUsed == p.nodesUsed && slices.Equal(m.used, p.used) {
		return -1, m.reason
	}
	var cur int
	if p.binding {
		cur = s.efficientFit(e, v)
	} else {
		cur = s.cheapestFit(e, nil, v)
	}
	if cur >= 0 {
		return cur, scheduling.Reason{}
	}
	reason := s.fitReason(e, v)
	if memo {
		if s.newFitMemos == nil {
			s.newFitMemos = map[[2]int]*newFitMemo{}
		}
		s.newFitMemos[key] = &newFitMemo{used: p.used.Clone(), nodesUsed: p.nodesUsed, reason: reason}
	}
	return -1, reason
}
