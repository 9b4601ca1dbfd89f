package simulation

import (
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// finish turns the solver state into a Result.
func (s *solver) finish(failed []*podInfo) *Result {
	res := &Result{NodeClaims: make([]*NodeClaim, 0, len(s.claims)), Order: make([]Placement, 0, len(s.placements))}
	claimIndex := make([]int, len(s.claims)) // by target.claim
	s.shareSlack()
	for _, t := range s.claims {
		if len(t.pods) == 0 {
			continue
		}
		claimIndex[t.claim] = len(res.NodeClaims)
		res.NodeClaims = append(res.NodeClaims, s.nodeClaim(t))
	}
	for _, t := range s.existing {
		if len(t.pods) == 0 {
			continue
		}
		ep := &ExistingPlacement{Node: t.existing}
		for _, p := range t.pods {
			ep.Pods = append(ep.Pods, p.pod)
		}
		res.ExistingNodes = append(res.ExistingNodes, ep)
	}
	for _, pl := range s.placements {
		if pl.t.existing != nil {
			res.Order = append(res.Order, Placement{Pod: pl.pod.pod, NodeClaim: -1, Node: pl.t.existing, Relaxed: pl.pod.relaxed})
		} else {
			res.Order = append(res.Order, Placement{Pod: pl.pod.pod, NodeClaim: claimIndex[pl.pod.at.claim], Relaxed: pl.pod.relaxed})
		}
	}
	if len(res.NodeClaims) == 0 { // as without preallocation
		res.NodeClaims = nil
	}
	if len(res.Order) == 0 {
		res.Order = nil
	}
	sort.SliceStable(failed, func(i, j int) bool { return failed[i].index < failed[j].index })
	for _, p := range failed {
		res.PodErrors = append(res.PodErrors, PodError{Pod: p.pod, Status: p.status})
	}
	return res
}

// nodeClaim renders an open NodeClaim: the types that hold its pods (within
// limits), cheapest first and capped; requirements narrowed to them.
func (s *solver) nodeClaim(t *target) *NodeClaim {
	e := t.entry
	p := e.pool
	zero := s.zero()
	curCap := p.types[t.cur].capacity
	it := p.types[t.cur].it
	reqs := e.reqs.Copy()
	offering := s.reserve(it, e.reqs, reqs)
	pinned := offering.ReservationID != ""
	n := min(len(e.order), s.maxInstanceTypes)
	types := make([]*scheduling.InstanceType, 0, n)
	first, last := -1, -1 // positions in e.order of the first and last listed types
	var cts []string
	var ctLists []int32
	var most scheduling.Vector
	for pos, i := range e.order {
		if len(types) >= s.maxInstanceTypes {
			break
		}
		if !s.fitsAt(e, i, t.used, zero) || !p.withinSlack(p.types[i].capacity, curCap) {
			continue
		}
		if pinned {
			if _, ok := p.types[i].it.CheapestOffering(reqs); !ok {
				continue
			}
		}
		types = append(types, p.types[i].it)
		if first < 0 {
			first = pos
		}
		last = pos
		most = maxVector(most, p.types[i].capacity)
		// Most types offer the same capacity types: merge each distinct
		// list once.
		if id := s.capacityTypes(e, i); !slices.Contains(ctLists, id) {
			ctLists = append(ctLists, id)
			for _, ct := range s.ctLists[id] {
				if !slices.Contains(cts, ct) && (!pinned || ct == offering.CapacityType) {
					cts = append(cts, ct)
				}
			}
		}
	}
	p.takeSlack(most, curCap)
	reqs.Add(s.typeRequirement(e, first, last, types))
	reqs.Add(scheduling.NewRequirement(scheduling.LabelCapacityType, corev1.NodeSelectorOpIn, cts...))
	over := s.overhead(e, t.cur)
	requests := t.used.Clone()
	requests.Add(over)
	nc := &NodeClaim{NodePool: p.np, Requirements: reqs, InstanceTypes: types, InstanceType: it, Offering: offering,
		Price: offering.Price, DaemonOverhead: s.resources.List(over), Requests: s.resources.List(requests), MinValuesRelaxed: t.relaxed}
	nc.Pods = make([]*corev1.Pod, len(t.pods))
	for i, pi := range t.pods {
		nc.Pods[i] = pi.pod
	}
	return nc
}

// shareSlack sets, per NodePool with limits, the room its new NodeClaims
// may list larger instance types in (the provider may launch any listed
// type): what the limits leave over the chosen types, or none when a limit
// refused a pod in the last placement pass, so the usage that pod was told
// is what the NodeClaims hold.
func (s *solver) shareSlack() {
	for _, p := range s.pools {
		if !p.hasLimits {
			continue
		}
		p.slack = make(scheduling.Vector, len(p.limits))
		if p.refused {
			continue
		}
		for k, l := range p.limits {
			if l >= 0 {
				p.slack[k] = max(l-p.used[k], 0)
			}
		}
	}
}

// withinSlack reports whether a NodeClaim on a type of capacity cur may
// also list one of capacity next.
func (p *pool) withinSlack(next, cur scheduling.Vector) bool {
	if !p.hasLimits {
		return true
	}
	for k, l := range p.limits {
		if l >= 0 && next[k]-cur[k] > p.slack[k] {
			return false
		}
	}
	return true
}

// takeSlack counts what listing types takes beyond the chosen capacity cur
// against the slack and the pool's usage, so the usage is what the largest
// listed types (most) would hold.
func (p *pool) takeSlack(most, cur scheduling.Vector) {
	if !p.hasLimits || most == nil {
		return
	}
	for k, l := range p.limits {
		if extra := most[k] - cur[k]; l >= 0 && extra > 0 {
			p.slack[k] -= extra
			p.used[k] += extra
		}
	}
}

// maxVector raises most to x element-wise (a copy of x when most is nil).
func maxVector(most, x scheduling.Vector) scheduling.Vector {
	if most == nil {
		return x.Clone()
	}
	for k, v := range x {
		most[k] = max(most[k], v)
	}
	return most
}

// capacityTypes is the id in ctLists of the capacity types of type i's
// available offerings compatible with e, cached per entry. Equal lists
// have one id.
func (s *solver) capacityTypes(e *entry, i int) int32 {
	if e.cts == nil {
		e.cts = make([]int32, len(e.pool.types))
		e.offers = scheduling.NewOfferingFilter(e.reqs)
	}
	if e.cts[i] == 0 {
		var small [4]string
		list := small[:0]
		for _, o := range e.pool.types[i].it.Offerings {
			if o.Usable() && e.offers.Admits(o) && !slices.Contains(list, o.CapacityType) {
				list = append(list, o.CapacityType)
			}
		}
		e.cts[i] = s.internCapacityTypes(list) + 1
	}
	return e.cts[i] - 1
}

// internCapacityTypes returns the id of list in ctLists, adding a copy of
// it if new (a solve sees a few distinct lists).
func (s *solver) internCapacityTypes(list []string) int32 {
	for id, l := range s.ctLists {
		if slices.Equal(l, list) {
			return int32(id)
		}
	}
	s.ctLists = append(s.ctLists, slices.Clone(list))
	return int32(len(s.ctLists) - 1)
}

// typeRequirement is instance-type In the listed types, which sit at
// increasing positions of the entry's price order from first to last; a
// contiguous run (the common case) is built once and shared.
func (s *solver) typeRequirement(e *entry, first, last int, types []*scheduling.InstanceType) *scheduling.Requirement {
	contiguous := len(types) > 0 && last-first == len(types)-1
	key := [3]int{e.id, -1, len(types)}
	if contiguous {
		key[1] = first
		if r, ok := s.typeRequirements[key]; ok {
			return r
		}
	}
	names := make([]string, len(types))
	for i, it := range types {
		names[i] = it.Name
	}
	r := scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, names...)
	if contiguous {
		s.typeRequirements[key] = r
	}
	return r
}

// reserve picks the NodeClaim's offering: the cheapest compatible one whose
// capacity reservation (if any) still has room after the NodeClaims
// finalized before it. A reserved choice consumes one instance of the
// reservation and pins the NodeClaim to it (capacity type and reservation
// ID), as a launch must then use that reservation.
func (s *solver) reserve(it *scheduling.InstanceType, entryReqs, reqs scheduling.Requirements) *scheduling.Offering {
	o, ok := it.CheapestOfferingWhere(entryReqs, func(o *scheduling.Offering) bool {
		return o.ReservationID == "" || s.reservationUse[o.ReservationID] < o.ReservationCapacity
	})
	if !ok {
		// Every reservation is used up: fall back to the cached cheapest.
		o, _ = it.CheapestOffering(entryReqs)
		return o
	}
	if o.ReservationID != "" {
		s.reservationUse[o.ReservationID]++
		reqs.Add(scheduling.NewRequirement(scheduling.LabelCapacityType, corev1.NodeSelectorOpIn, o.CapacityType),
			scheduling.NewRequirement(scheduling.LabelReservationID, corev1.NodeSelectorOpIn, o.ReservationID))
	}
	return o
}
