package simulation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// fitsAt reports whether used + req + daemon overhead fit type i of e.
func (s *solver) fitsAt(e *entry, i int, used, req scheduling.Vector) bool {
	alloc := e.pool.types[i].alloc
	over := s.overhead(e, i)
	for k := range used {
		if used[k]+req[k]+over[k] > alloc[k] {
			return false
		}
	}
	return true
}

func (s *solver) portsFree(e *entry, i int, v *variant) bool {
	if len(v.class.ports) == 0 {
		return true
	}
	s.overhead(e, i)
	_, conflict := scheduling.HostPortConflict(e.ports[i], v.class.ports)
	return !conflict
}

// cheapestFit finds the cheapest type of e that holds t's pods plus the
// pod (t nil: a new NodeClaim), within limits and minValues; -1 if none.
func (s *solver) cheapestFit(e *entry, t *target, v *variant) int {
	req := v.class.requests
	used := s.zero()
	start := 0
	var curCap scheduling.Vector
	p := e.pool
	if t != nil {
		used = t.used
		curCap = p.types[t.cur].capacity
		if e == t.entry {
			start = e.rank[t.cur]
		}
	}
	if s.limitExcludes(p, used, req, curCap) {
		return -1
	}
	for _, i := range e.order[start:] {
		if !s.fitsAt(e, i, used, req) || !s.portsFree(e, i, v) || !s.limitsAllow(p, p.types[i].capacity, curCap) {
			continue
		}
		if len(p.minValues) > 0 && s.in.Options.MinValuesPolicy != MinValuesPolicyBestEffort && !s.minValuesOK(e, used, req) {
			return -1
		}
		return i
	}
	return -1
}

// limitsAllow reports whether swapping capacity old (nil: none) for next
// keeps the pool within its limits.
func (s *solver) limitsAllow(p *pool, next, old scheduling.Vector) bool {
	if !p.hasLimits {
		return true
	}
	for k, l := range p.limits {
		if l < 0 {
			continue
		}
		delta := next[k]
		if old != nil {
			delta -= old[k]
		}
		if p.used[k]+delta > l {
			return false
		}
	}
	return true
}

// minValuesOK reports whether the types of e that fit used+req span at
// least minValues distinct values of every key that sets minValues.
func (s *solver) minValuesOK(e *entry, used, req scheduling.Vector) bool {
	for _, mv := range e.pool.minValues {
		seen := map[string]bool{}
		for _, i := range e.order {
			if !s.fitsAt(e, i, used, req) {
				continue
			}
			if r := e.pool.types[i].it.Requirements[mv.Key]; r != nil {
				for _, val := range r.Values() {
					if mvr := e.reqs[mv.Key]; mvr == nil || mvr.Has(val) {
						seen[val] = true
					}
				}
			}
		}
		if len(seen) < *mv.MinValues {
			return false
		}
	}
	return true
}

// fitReason explains why no type of e holds the pod alone; only a
// NodePoolLimit reason may resolve itself (once capacity is freed).
func (s *solver) fitReason(e *entry, v *variant) scheduling.Reason {
	pool := e.pool.name
	req := v.class.requests
	zero := s.zero()
	for k := range req {
		if req[k] == 0 {
			continue
		}
		fits, alone := false, false
		var most, free int64
		for _, i := range e.order {
			alloc := e.pool.types[i].alloc[k]
			most, free = max(most, alloc), max(free, alloc-s.overhead(e, i)[k])
			fits = fits || req[k]+s.overhead(e, i)[k] <= alloc
			alone = alone || req[k] <= alloc
		}
		if !fits {
			name := s.resources.Name(k)
			q := scheduling.HumanUnits(name, req[k])
			m, f := scheduling.HumanUnits(name, most), scheduling.HumanUnits(name, max(free, 0))
			msg := fmt.Sprintf("no instance type has %s %s (the largest allocatable is %s)", q, name, m)
			if alone {
				msg = fmt.Sprintf("no instance type has room for %s %s next to its DaemonSets (at most %s is left after them)", q, name, f)
			}
			return scheduling.PoolReason(pool, scheduling.ReasonInstanceTypesTooSmall, msg)
		}
	}
	for _, i := range e.order {
		if !s.fitsAt(e, i, zero, req) {
			continue
		}
		if !s.portsFree(e, i, v) {
			port, _ := scheduling.HostPortConflict(e.ports[i], v.class.ports)
			return scheduling.PoolReason(pool, scheduling.ReasonHostPortConflict, fmt.Sprintf("host port %s is taken by a DaemonSet", port))
		}
		if r := s.limitReason(e.pool, e.pool.types[i].capacity); r != "" {
			return scheduling.PoolReason(pool, scheduling.ReasonNodePoolLimit, r)
		}
		if len(e.pool.minValues) > 0 {
			return scheduling.PoolReason(pool, scheduling.ReasonMinValues, "minValues not satisfied by the instance types that fit")
		}
	}
	list := s.resources.List(req)
	delete(list, corev1.ResourcePods)
	return scheduling.PoolReason(pool, scheduling.ReasonInstanceTypesTooSmall, fmt.Sprintf("no instance type fits %s together", formatList(s, list)))
}

func formatList(s *solver, rl corev1.ResourceList) string {
	out := ""
	for k := 0; k < s.resources.Len(); k++ {
		name := s.resources.Name(k)
		if q, ok := rl[name]; ok {
			if out != "" {
				out += ", "
			}
			out += string(name) + "=" + q.String()
		}
	}
	return out
}

func (s *solver) zero() scheduling.Vector {
	if len(s.zeroVector) != s.resources.Len() {
		s.zeroVector = make(scheduling.Vector, s.resources.Len())
	}
	return s.zeroVector
}

// tightness is how much room (cpu plus memory, as fractions of the shape)
// a NodeClaim keeps after taking req on its current shape.
func (s *solver) tightness(t *target, req scheduling.Vector) float64 {
	return s.tightnessAt(t.entry.pool.types[t.cur], t.used, req)
}

func (s *solver) tightnessAt(it *itype, used, req scheduling.Vector) float64 {
	room := 0.0
	for _, k := range []int{scheduling.SlotCPU, scheduling.SlotMemory} {
		if a := it.alloc[k]; a > 0 {
			room += float64(a-used[k]-req[k]) / float64(a)
		}
	}
	return room
}
