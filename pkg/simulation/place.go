package simulation

import (
	"context"
	"sort"
	"strings"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// option is a candidate placement on a NodeClaim (t nil: a new one).
type option struct {
	t     *target
	pool  *pool
	e     *entry
	cur   int
	delta float64 // price increase
	tight float64 // room left after placing, lower is a tighter fit
}

// cancelledMessage starts the status of every pod a cancelled solve had
// no time to place.
const cancelledMessage = "simulation cancelled: "

// Cancelled reports whether st is the status of a pod the solve had no
// time to place (its context ended first), as opposed to one that does not
// fit: such a pod is simply placed by a later solve.
func Cancelled(st *scheduling.Status) bool {
	return st != nil && st.Code == scheduling.Error && strings.HasPrefix(st.Message(), cancelledMessage)
}

// run places pods in order, retrying the ones that failed as long as a pass
// places something (a pod may need another pod placed first). It returns
// the pods left unplaced.
func (s *solver) run(ctx context.Context, pods []*podInfo) []*podInfo {
	queue := pods
	for len(queue) > 0 {
		var next []*podInfo
		for _, pl := range s.pools {
			pl.refused = false
		}
		for i, p := range queue {
			if ctx.Err() != nil {
				for _, q := range queue[i:] {
					q.status = scheduling.NewStatus(scheduling.Error, scheduling.Because(scheduling.ReasonSolveError, cancelledMessage+ctx.Err().Error()))
				}
				return append(next, queue[i:]...)
			}
			if p.status = s.place(p); p.status != nil {
				next = append(next, p)
			}
		}
		if len(next) == len(queue) {
			return next
		}
		queue = next
	}
	return nil
}

// place puts the pod on existing capacity if it fits there at any
// relaxation level; otherwise it tries each level in order: the open
// NodeClaim where the pod adds the least cost, then a new NodeClaim when
// that is cheaper or nothing else fits.
//
// Existing nodes come first at every level because kube-scheduler binds a
// pod to any node that fits, preferences or not: launching a node only to
// honour a preference the scheduler will ignore is the churn users report
// (upstream treats preferences as requirements here: its issues 666, 4915).
func (s *solver) place(p *podInfo) *scheduling.Status {
	waiting := s.in.waiting[p.pod]
	claims := s.podClaims(p)
	for _, v := range p.class.variants {
		if t := s.tryExisting(v, claims, waiting); t != nil {
			p.relaxed = v.relaxed
			s.commitExisting(p, t)
			s.attach(t, claims)
			return nil
		}
	}
	var status *scheduling.Status
	for _, v := range p.class.variants {
		best, ok := s.tryClaims(v)
		if ok && best.delta == 0 {
			s.commit(p, v, &best)
			return nil
		}
		fresh, st := s.tryNew(v)
		switch {
		case ok && (fresh == nil || best.delta <= fresh.delta):
			s.commit(p, v, &best)
			return nil
		case fresh != nil:
			s.commit(p, v, fresh)
			return nil
		}
		status = st
	}
	return status
}

// tryExisting finds an existing node for a pod of v attaching claims; a
// closed one only for a waiting pod.
func (s *solver) tryExisting(v *variant, claims []claimRef, waiting bool) *target {
	for _, t := range s.existing {
		if t.closed && !waiting {
			continue
		}
		for len(t.compat) <= v.shared {
			t.compat = append(t.compat, unchecked)
		}
		if t.compat[v.shared] == unchecked {
			t.compat[v.shared] = incompatible
			if t.nodeReqs.StrictlyCompatible(v.reqs) == nil && tolerated(t.nodeTnts, v.class.tolerates, v.strictPNS) == nil {
				t.compat[v.shared] = compatible
			}
		}
		if t.compat[v.shared] != compatible || !v.class.requests.Fits(t.free) ||
			claims != nil && !s.volumesFit(t, claims) {
			continue
		}
		if _, conflict := scheduling.HostPortConflict(t.ports, v.class.ports); conflict {
			continue
		}
		if _, reason := s.topoCheck(v, t, nil, false); reason != "" {
			continue
		}
		return t
	}
	return nil
}

// compatEntry is the entry of a NodeClaim with entry e after adding a pod
// of variant v, nil when incompatible.
func (s *solver) compatEntry(e *entry, v *variant) *entry {
	for len(e.compat) <= v.shared {
		e.compat = append(e.compat, entryStep{})
	}
	switch step := e.compat[v.shared]; step.verdict {
	case incompatible:
		return nil
	case compatible:
		return s.entries[step.next]
	}
	if e.reqs.Compatible(v.reqs, s.wellKnown) != nil {
		e.compat[v.shared] = entryStep{verdict: incompatible}
		return nil
	}
	out := s.entryForIntersection(e.pool, e.reqs, v.reqs)
	if len(out.order) == 0 {
		e.compat[v.shared] = entryStep{verdict: incompatible}
		return nil
	}
	e.compat[v.shared] = entryStep{verdict: compatible, next: int32(out.id)}
	return out
}

// Probe widths: how many feasible NodeClaims tryClaims compares before
// choosing, when it has to search the whole list.
const (
	zeroProbe = 16
	growProbe = 16
)

// tryClaims picks the open NodeClaim where the pod adds the least cost: a
// NodeClaim whose current shape still has room (the tightest of the first
// few, searching from the least free cpu that can hold the pod), else the
// one whose next cheapest shape costs least more (searching from the most
// free cpu, or for a memory-heavy pod from the least: NodeClaims short of
// cpu are the ones likely to have memory to spare, while growing one with
// idle cpu for memory leaves that cpu idle on a larger type).
func (s *solver) tryClaims(v *variant) (option, bool) {
	if hc := s.hostCandidates(v); hc != nil {
		return s.bestOf(v, hc)
	}
	req := v.class.requests
	lo := sort.Search(len(s.claimsByFree), func(i int) bool {
		return s.claimsByFree[i].free[scheduling.SlotCPU] >= req[scheduling.SlotCPU]
	})
	var best option
	found := 0
	for _, t := range s.claimsByFree[lo:] {
		if found >= zeroProbe {
			break
		}
		if !req.Fits(t.free) {
			continue
		}
		if o, ok := s.zeroDelta(v, t); ok {
			found++
			if found == 1 || o.tight < best.tight {
				best = o
			}
		}
	}
	if found > 0 {
		return best, true
	}
	memHeavy := s.memHeavy(req)
	for j := 0; j < len(s.claimsByFree) && found < growProbe; j++ {
		i := len(s.claimsByFree) - 1 - j
		if memHeavy {
			i = j
		}
		if o, ok := s.grown(v, s.claimsByFree[i]); ok {
			found++
			if found == 1 || better(&o, &best) {
				best = o
			}
		}
	}
	return best, found > 0
}

func better(a, b *option) bool {
	return a.delta < b.delta || a.delta == b.delta && a.tight < b.tight
}

// bestOf compares every NodeClaim in ts.
func (s *solver) bestOf(v *variant, ts []*target) (option, bool) {
	var best option
	found := 0
	for _, t := range ts {
		if found >= 2*zeroProbe {
			break
		}
		if t.gone() || !v.class.requests.Fits(t.free) {
			continue
		}
		if o, ok := s.zeroDelta(v, t); ok {
			if found++; found == 1 || o.tight < best.tight {
				best = o
			}
		}
	}
	if found > 0 {
		return best, true
	}
	for _, t := range ts {
		if found >= growProbe {
			break
		}
		if t.gone() {
			continue
		}
		if o, ok := s.grown(v, t); ok {
			if found++; found == 1 || better(&o, &best) {
				best = o
			}
		}
	}
	return best, found > 0
}

// admit runs the non-resource checks of putting v on NodeClaim t and
// returns the NodeClaim's entry afterwards, or nil.
func (s *solver) admit(v *variant, t *target) *entry {
	if s.poolFor(v, t.entry.pool.index).entry == nil {
		return nil
	}
	e := s.compatEntry(t.entry, v)
	if e == nil {
		return nil
	}
	if len(v.class.ports) > 0 {
		if _, conflict := scheduling.HostPortConflict(t.ports, v.class.ports); conflict {
			return nil
		}
	}
	e, reason := s.topoCheck(v, t, e, false)
	if reason != "" {
		return nil
	}
	return e
}

// zeroDelta is the option of putting v on t without changing its shape.
func (s *solver) zeroDelta(v *variant, t *target) (option, bool) {
	e := s.admit(v, t)
	req := v.class.requests
	if e == nil || !e.ok.has(t.cur) || e.price[t.cur] > t.price() || !s.fitsAt(e, t.cur, t.used, req) || !s.portsFree(e, t.cur, v) {
		return option{}, false
	}
	return option{t: t, pool: t.entry.pool, e: e, cur: t.cur, delta: e.price[t.cur] - t.price(), tight: s.tightness(t, req)}, true
}

// grown is the option of putting v on t on the cheapest shape that fits.
func (s *solver) grown(v *variant, t *target) (option, bool) {
	// A NodeClaim the limits leave no room to grow is refused before the
	// checks of admit, which cost more than the bound.
	if p := t.entry.pool; s.limitExcludes(p, t.used, v.class.requests, p.types[t.cur].capacity) {
		return option{}, false
	}
	e := s.admit(v, t)
	if e == nil {
		return option{}, false
	}
	cur := s.cheapestFit(e, t, v)
	if cur < 0 {
		return option{}, false
	}
	return option{t: t, pool: e.pool, e: e, cur: cur, delta: e.price[cur] - t.price(),
		tight: s.tightnessAt(e.pool.types[cur], t.used, v.class.requests)}, true
}

// tryNew opens a NodeClaim in the first NodePool (by weight) that can hold
// the pod, or explains per NodePool why none can.
func (s *solver) tryNew(v *variant) (*option, *scheduling.Status) {
	code := scheduling.UnschedulableAndUnresolvable
	var reasons []scheduling.Reason
	// The NodeClaim it would open, reused: the checks only read it.
	fresh := &s.fresh
	*fresh = target{id: len(s.targets)}
	for pi, p := range s.pools {
		pc := s.poolFor(v, pi)
		if pc.entry == nil {
			reasons = append(reasons, pc.reason)
			continue
		}
		e, reason := s.topoCheck(v, fresh, pc.entry, true)
		why := scheduling.ReasonTopology
		if reason == "" && p.nodeLimit >= 0 && p.nodesUsed >= p.nodeLimit {
			reason, why = s.limitReason(p, make(scheduling.Vector, s.resources.Len())), scheduling.ReasonNodePoolLimit
			p.refuse()
		}
		if reason != "" {
			code = scheduling.Unschedulable
			reasons = append(reasons, scheduling.PoolReason(p.name, why, reason))
			continue
		}
		cur, fit := s.newClaimFit(e, v)
		if cur < 0 {
			if fit.Code == scheduling.ReasonNodePoolLimit {
				code = scheduling.Unschedulable
				p.refuse()
			}
			reasons = append(reasons, fit)
			continue
		}
		return &option{pool: p, e: e, cur: cur, delta: e.price[cur]}, nil
	}
	if len(s.pools) == 0 {
		reasons = append(reasons, scheduling.Because(scheduling.ReasonNoNodePool, "no NodePool can launch nodes"))
	}
	return nil, scheduling.NewStatus(code, reasons...)
}

func (s *solver) commit(p *podInfo, v *variant, o *option) {
	t := o.t
	pl := o.pool
	if t == nil {
		t = &target{id: len(s.targets), entry: o.e, cur: o.cur, used: make(scheduling.Vector, s.resources.Len()),
			free: make(scheduling.Vector, s.resources.Len()), claim: len(s.claims)}
		s.targets = append(s.targets, t)
		s.claims = append(s.claims, t)
		for _, g := range s.eligibleGroups {
			for _, l := range g.elig {
				l.ts = append(l.ts, t)
			}
		}
		pl.nodesUsed++
		pl.used.Add(pl.types[o.cur].capacity)
		for _, kid := range v.pinKeys {
			if d := s.entryDom(o.e, kid); d >= 0 {
				s.pinCounts[pinKey(kid, d)]++
			}
		}
	} else {
		pl.used.Add(pl.types[o.cur].capacity)
		pl.used.Sub(pl.types[t.cur].capacity)
		for _, kid := range v.pinKeys {
			if d := s.entryDom(o.e, kid); d >= 0 && s.entryDom(t.entry, kid) < 0 {
				s.pinCounts[pinKey(kid, d)]++
			}
		}
		t.entry, t.cur = o.e, o.cur
	}
	if len(pl.minValues) > 0 && !s.minValuesOK(t.entry, t.used, v.class.requests) {
		t.relaxed = true
	}
	pos := -1
	if o.t != nil {
		pos = s.freePos(t)
	}
	t.used.Add(v.class.requests)
	s.refreshFree(t)
	s.reindex(t, pos)
	p.variant = v
	p.relaxed = v.relaxed
	s.record(p, t)
}

// reindex moves t to its place in byFree after its free cpu changed; pos
// is its current index, -1 when it is new. Only the slots between the old
// and the new place shift.
func (s *solver) reindex(t *target, pos int) {
	if pos < 0 {
		s.claimsByFree = append(s.claimsByFree, t)
		pos = len(s.claimsByFree) - 1
	}
	others := len(s.claimsByFree) - 1
	at := func(k int) *target { // byFree without t's slot
		if k >= pos {
			k++
		}
		return s.claimsByFree[k]
	}
	k := sort.Search(others, func(k int) bool { return !freeLess(at(k), t) })
	switch {
	case k < pos:
		copy(s.claimsByFree[k+1:pos+1], s.claimsByFree[k:pos])
	case k > pos:
		copy(s.claimsByFree[pos:k], s.claimsByFree[pos+1:k+1])
	}
	s.claimsByFree[k] = t
}

func freeLess(a, b *target) bool {
	fa, fb := a.free[scheduling.SlotCPU], b.free[scheduling.SlotCPU]
	return fa < fb || fa == fb && a.id < b.id
}

func (s *solver) freePos(t *target) int {
	f := t.free[scheduling.SlotCPU]
	return sort.Search(len(s.claimsByFree), func(i int) bool {
		o := s.claimsByFree[i]
		of := o.free[scheduling.SlotCPU]
		return of > f || of == f && o.id >= t.id
	})
}

func (s *solver) commitExisting(p *podInfo, t *target) {
	t.used.Add(p.class.requests)
	t.free.Sub(p.class.requests)
	s.record(p, t)
}

func (s *solver) record(p *podInfo, t *target) {
	p.at = t
	p.class.waiting--
	t.ports = append(t.ports, p.class.ports...)
	t.pods = append(t.pods, p)
	for _, g := range p.class.counts {
		g.recordMatch(s, t)
	}
	for _, g := range p.class.owns {
		g.recordOwner(s, t)
	}
	p.seq = len(s.placements)
	s.placements = append(s.placements, placed{pod: p, t: t})
}

// memHeavy reports whether req takes a larger share of the largest
// allocatable memory than of cpu.
func (s *solver) memHeavy(req scheduling.Vector) bool {
	c, m := s.maxAlloc[scheduling.SlotCPU], s.maxAlloc[scheduling.SlotMemory]
	return c > 0 && m > 0 && float64(req[scheduling.SlotMemory])/float64(m) > float64(req[scheduling.SlotCPU])/float64(c)
}
