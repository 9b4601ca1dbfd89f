package simulation

import (
	"math"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// pool is a NodePool prepared for solving.
type pool struct {
	index  int
	np     *karpv1.NodePool
	name   string
	reqs   scheduling.Requirements // template requirements ∩ template labels ∩ nodepool label
	taints scheduling.Taints
	types  []*itype // instance types compatible with reqs
	// limits, indexed like vectors; -1 means unlimited.
	limits    scheduling.Vector
	hasLimits bool
	nodeLimit int64 // -1 unlimited
	used      scheduling.Vector
	nodesUsed int64
	minValues []*scheduling.Requirement
	daemons   []*daemon // DaemonSets tolerating the pool's taints
	root      *entry
	// bounds and overFloor let grown and cheapestFit skip a NodeClaim the
	// limits leave no room to grow (see limitExcludes).
	bounds    []capBound
	overFloor scheduling.Vector
	// binding is set when the pool is solved limit-efficiently: its new
	// NodeClaims take the instance type that holds the most pods per unit
	// of its limits (binding.go). constrained lists, in placement order,
	// the classes whose pods only this pool can take.
	binding     bool
	constrained []*class
	// refused is set when a limit kept a pod out in the current placement
	// pass; everRefused when one did at any point of the solve.
	refused, everRefused bool
	// slack is the room left under each limit that finish lets NodeClaims
	// list larger types in.
	slack scheduling.Vector
}

// itype is an instance type with its vectors.
type itype struct {
	it       *scheduling.InstanceType
	idx      int
	alloc    scheduling.Vector
	capacity scheduling.Vector
}

// entry is an interned requirement set of one pool: what a NodeClaim of the
// pool with these requirements can be. Entries are shared by NodeClaims and
// cache compatibility with pod variants, prices and daemon overhead.
type entry struct {
	id     int
	pool   *pool
	reqs   scheduling.Requirements
	ok     bitset    // pool types compatible with reqs with an available offering
	price  []float64 // per pool type: cheapest compatible offering (+Inf if none)
	order  []int     // ok types by price
	rank   []int     // pool type -> position in order (-1 if not ok)
	over   []scheduling.Vector
	ports  [][]scheduling.HostPort   // per type: daemon host ports (nil when none)
	compat []entryStep               // by variant.shared: where a pod of the variant leads
	pins   map[int64]int             // pinKey -> entry id
	doms   [][]dom                   // by key id: possible domains (nil: not computed)
	dom    []dom                     // by key id: the fixed domain, noDom, or unknownDom
	cts    []int32                   // per type: 1 + the capacityTypes id (0: not computed)
	offers scheduling.OfferingFilter // reqs' filter of offerings, set with cts
}

// entryStep caches what adding a pod of one variant does to a NodeClaim
// of an entry: incompatible, or compatible and leading to the entry next
// (by id).
type entryStep struct {
	verdict verdict
	next    int32
}

type bitset []uint64

func newBitset(n int) bitset    { return make(bitset, (n+63)/64) }
func (b bitset) set(i int)      { b[i/64] |= 1 << (uint(i) % 64) }
func (b bitset) has(i int) bool { return b[i/64]&(1<<(uint(i)%64)) != 0 }

// newPool prepares a NodePool; types incompatible with its requirements are
// dropped up front.
func (s *solver) newPool(in *NodePool) *pool {
	np := in.NodePool
	p := &pool{np: np, name: np.Name, nodeLimit: -1}
	p.reqs = scheduling.NewLabelRequirements(np.Spec.Template.ObjectMeta.Labels)
	for _, r := range np.Spec.Template.Spec.Requirements {
		req := scheduling.NewRequirement(scheduling.NormalizeKey(r.Key), r.Operator, r.Values...)
		req.MinValues = r.MinValues
		p.reqs.Add(req)
		if r.MinValues != nil {
			p.minValues = append(p.minValues, req)
		}
	}
	p.reqs.Add(scheduling.NewRequirement(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, np.Name))
	p.taints = np.Spec.Template.Spec.Taints
	p.types = s.in.NodeCache.poolTypes(poolTypesKey{pool: in, resources: s.resourceKey()}, func() []*itype {
		var types []*itype
		for _, it := range in.InstanceTypes {
			if p.reqs.Intersects(it.Requirements) != nil {
				continue
			}
			types = append(types, &itype{it: it, idx: len(types), alloc: s.resources.Vector(it.Allocatable), capacity: s.capacityVector(it)})
		}
		return types
	})
	p.limits = make(scheduling.Vector, s.resources.Len())
	for i := range p.limits {
		p.limits[i] = -1
	}
	for name, q := range np.Spec.Limits {
		if name == "nodes" {
			p.nodeLimit = q.Value()
			continue
		}
		if slot := s.resources.Slot(name); slot >= 0 {
			p.limits[slot] = unitsOf(name, q)
			p.hasLimits = true
		}
	}
	p.used = make(scheduling.Vector, s.resources.Len())
	// PreferNoSchedule taints do not keep DaemonSet pods off a node, so a
	// DaemonSet counts on such a pool without tolerating them (upstream
	// requires the toleration and sizes such nodes too small: its issue 715).
	for _, d := range s.daemons {
		if p.taints.ToleratesPod(d.tolerations) == nil {
			p.daemons = append(p.daemons, d)
		}
	}
	buildBounds(p, s.resources.Len())
	return p
}

// resourceKey names the solver's resource index: its resource names in
// slot order.
func (s *solver) resourceKey() string {
	if s.resourceKeyStr == "" {
		var b strings.Builder
		for i := range s.resources.Len() {
			b.WriteString(string(s.resources.Name(i)))
			b.WriteByte(0)
		}
		s.resourceKeyStr = b.String()
	}
	return s.resourceKeyStr
}

func unitsOf(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// capacityVector is the instance type's capacity (allocatable when absent),
// used for limits.
func (s *solver) capacityVector(it *scheduling.InstanceType) scheduling.Vector {
	if len(it.Capacity) > 0 {
		return s.resources.Vector(it.Capacity)
	}
	return s.resources.Vector(it.Allocatable)
}

// entryFor interns reqs for the pool.
func (s *solver) entryFor(p *pool, reqs scheduling.Requirements) *entry {
	return s.entryNarrowed(p, reqs, nil, "")
}

// entryNarrowed interns reqs for the pool; from, when not nil, is the
// entry reqs narrow on the key narrowed alone (newEntry).
func (s *solver) entryNarrowed(p *pool, reqs scheduling.Requirements, from *entry, narrowed string) *entry {
	s.keyBuf = reqs.AppendKey(append(append(s.keyBuf[:0], p.name...), 0))
	if e, ok := s.entryByKey[string(s.keyBuf)]; ok {
		return e
	}
	return s.newEntry(p, reqs, string(s.keyBuf), from, narrowed)
}

// entryForIntersection is entryFor(p, a.Intersection(b)), building the
// intersection only when the pool has no entry for it yet.
func (s *solver) entryForIntersection(p *pool, a, b scheduling.Requirements) *entry {
	s.keyBuf = a.AppendIntersectionKey(append(append(s.keyBuf[:0], p.name...), 0), b)
	if e, ok := s.entryByKey[string(s.keyBuf)]; ok {
		return e
	}
	return s.newEntry(p, a.Intersection(b), string(s.keyBuf), nil, "")
}

// newEntry builds and interns the entry of reqs under key. When reqs are
// from's requirements narrowed on the key narrowed alone, only the types
// from holds are candidates, and only that key can exclude one of them.
func (s *solver) newEntry(p *pool, reqs scheduling.Requirements, key string, from *entry, narrowed string) *entry {
	n := len(p.types)
	e := &entry{id: len(s.entries), pool: p, reqs: reqs, ok: newBitset(n), price: make([]float64, n),
		rank: make([]int, n), over: make([]scheduling.Vector, n), ports: make([][]scheduling.HostPort, n),
		pins: map[int64]int{}}
	for i, t := range p.types {
		e.price[i] = math.Inf(1)
		e.rank[i] = -1
		if from != nil {
			if !from.ok.has(i) {
				continue
			}
			if tr := t.it.Requirements[narrowed]; tr != nil && !reqs[narrowed].Intersects(tr) {
				continue
			}
		} else if reqs.Intersects(t.it.Requirements) != nil {
			continue
		}
		if o, ok := t.it.CheapestOffering(reqs); ok {
			e.price[i] = o.Price
			e.ok.set(i)
			e.order = append(e.order, i)
		}
	}
	sort.SliceStable(e.order, func(a, b int) bool {
		pa, pb := e.price[e.order[a]], e.price[e.order[b]]
		if pa != pb {
			return pa < pb
		}
		return p.types[e.order[a]].it.Name < p.types[e.order[b]].it.Name
	})
	for pos, i := range e.order {
		e.rank[i] = pos
	}
	s.entryByKey[key] = e
	s.entries = append(s.entries, e)
	return e
}

// overhead is the daemon overhead of a NodeClaim with entry e on type i:
// the requests of exactly the DaemonSets whose pods would land there,
// judged against the NodeClaim's requirements and this instance type's
// labels. Upstream groups instance types per NodePool and ignores
// DaemonSet affinity to instance labels, so nodes come up too small or too
// big (user pain point: its issues 715 and 2838).
func (s *solver) overhead(e *entry, i int) scheduling.Vector {
	if v := e.over[i]; v != nil {
		return v
	}
	v := make(scheduling.Vector, s.resources.Len())
	var ports []scheduling.HostPort
	if len(e.pool.daemons) > 0 {
		nodeReqs := e.reqs.Intersection(e.pool.types[i].it.Requirements)
		for _, d := range e.pool.daemons {
			if d.landsOn(nodeReqs, s.wellKnown) {
				v.Add(d.requests)
				ports = append(ports, d.ports...)
			}
		}
	}
	e.over[i] = v
	e.ports[i] = ports
	return v
}

// pin returns the entry narrowed to key=value.
func (s *solver) pin(e *entry, kid int, d dom) *entry {
	k := pinKey(kid, d)
	if id, ok := e.pins[k]; ok {
		return s.entries[id]
	}
	key := s.topoKeys[kid]
	reqs := e.reqs.Copy()
	reqs.Add(scheduling.NewRequirement(key, corev1.NodeSelectorOpIn, s.domainValues[d]))
	out := s.entryNarrowed(e.pool, reqs, e, key)
	e.pins[k] = out.id
	return out
}

// domains lists the values key can take on a NodeClaim with entry e.
func (s *solver) domains(e *entry, kid int) []dom {
	for len(e.doms) <= kid {
		e.doms = append(e.doms, nil)
	}
	if d := e.doms[kid]; d != nil {
		return d
	}
	key := s.topoKeys[kid]
	var vals []string
	if r := e.reqs[key]; r != nil && !r.IsComplement() {
		vals = r.Values()
	} else {
		seen := map[string]bool{}
		offers := scheduling.NewOfferingFilter(e.reqs)
		for _, i := range e.order {
			it := e.pool.types[i].it
			if key == corev1.LabelTopologyZone {
				// A region has a few zones, which most types offer:
				// a lookup in vals costs less than one in seen.
				for _, o := range it.Offerings {
					if o.Usable() && offers.Admits(o) && !slices.Contains(vals, o.Zone) {
						vals = append(vals, o.Zone)
					}
				}
				continue
			}
			if tr := it.Requirements[key]; tr != nil {
				for _, v := range tr.Values() {
					if r == nil || r.Has(v) {
						seen[v] = true
					}
				}
			}
		}
		for v := range seen {
			vals = append(vals, v)
		}
		sort.Strings(vals)
	}
	out := make([]dom, 0, len(vals))
	for _, v := range vals {
		out = append(out, s.valID(v))
	}
	e.doms[kid] = out
	return out
}

// limitReason explains which limit blocks adding capacity cap to the pool.
func (s *solver) limitReason(p *pool, extra scheduling.Vector) string {
	if p.nodeLimit >= 0 && p.nodesUsed+1 > p.nodeLimit {
		return "limit nodes=" + resource.NewQuantity(p.nodeLimit, resource.DecimalSI).String() +
			" reached (" + resource.NewQuantity(p.nodesUsed, resource.DecimalSI).String() + " in use)"
	}
	for i, l := range p.limits {
		if l >= 0 && p.used[i]+extra[i] > l {
			name := s.resources.Name(i)
			lq, uq := scheduling.UnitsQuantity(name, l), scheduling.UnitsQuantity(name, p.used[i])
			return "limit " + string(name) + "=" + lq.String() + " reached (" + uq.String() + " in use)"
		}
	}
	return ""
}
