package simulation

import (
	"fmt"
	"math"
	"sort"
)

// fastFail is the reason returned when the caller did not ask for one.
const fastFail = "-"

// topoCheck evaluates v's topology constraints on t (whose requirements
// would become e). For a NodeClaim whose domain for a key is still open it
// picks the best allowed domain and returns e pinned to it. On failure it
// returns nil and a reason (a human-readable one only when explain is set).
func (s *solver) topoCheck(v *variant, t *target, e *entry, explain bool) (*entry, string) {
	for _, c := range v.constraints {
		if c.group.hostname && !s.checkConstraint(c, t, noDom) {
			return nil, s.reason(explain, c, noDom)
		}
	}
	for _, g := range v.class.inverse {
		if g.hostname && g.ownerCount(t, noDom) > 0 {
			return nil, inverseReason(explain, g.key)
		}
	}
	for _, kid := range v.pinKeys {
		var d dom
		switch {
		case t.existing != nil:
			d = s.targetDom(t, kid)
		default:
			d = s.entryDom(e, kid)
		}
		if d >= 0 || t.existing != nil {
			if ok, reason, _ := s.checkDomain(v, t, kid, d, explain); !ok {
				return nil, reason
			}
			continue
		}
		doms := s.domains(e, kid)
		if len(doms) == 0 {
			if ok, reason, _ := s.checkDomain(v, t, kid, noDom, explain); !ok {
				return nil, reason
			}
			continue
		}
		best, reason := s.chooseDomain(v, t, e, kid, doms, explain)
		if best == nil {
			return nil, reason
		}
		e = best
	}
	return e, ""
}

// chooseDomain picks among allowed domains: fewest pods of the pod's spread
// groups first (as kube-scheduler scores), then the cheapest current shape,
// then the domain fewer NodeClaims were pinned to, then the first listed.
func (s *solver) chooseDomain(v *variant, t *target, e *entry, kid int, doms []dom, explain bool) (*entry, string) {
	var best *entry
	var bestSum int32
	bestPrice := math.Inf(1)
	bestPinned := 0
	firstFailed := noDom
	committed := t.entry != nil && t.id < len(s.targets) && s.targets[t.id] == t
	for _, d := range doms {
		ok, _, sum := s.checkDomain(v, t, kid, d, false)
		if !ok {
			if firstFailed == noDom {
				firstFailed = d
			}
			continue
		}
		pe := s.pin(e, kid, d)
		price := math.Inf(1)
		if committed {
			price = pe.price[t.cur]
		} else if len(pe.order) > 0 {
			price = pe.price[pe.order[0]]
		}
		pinned := s.pinCounts[pinKey(kid, d)]
		if best == nil || sum < bestSum || sum == bestSum && (price < bestPrice || price == bestPrice && pinned < bestPinned) {
			best, bestSum, bestPrice, bestPinned = pe, sum, price, pinned
		}
	}
	if best != nil {
		return best, ""
	}
	// Explaining costs formatting, so only the failure returned is
	// explained: the first domain's, checked again against the same
	// counts.
	_, reason, _ := s.checkDomain(v, t, kid, firstFailed, explain)
	return nil, reason
}

// checkDomain evaluates every constraint of v on key kid at domain d.
func (s *solver) checkDomain(v *variant, t *target, kid int, d dom, explain bool) (bool, string, int32) {
	var sum int32
	for _, c := range v.constraints {
		if c.group.kid != kid {
			continue
		}
		if !s.checkConstraint(c, t, d) {
			return false, s.reason(explain, c, d), 0
		}
		if c.kind == kindSpread {
			sum += c.group.count(t, d)
		}
	}
	if d >= 0 {
		for _, g := range v.class.inverse {
			if g.kid == kid && g.ownerCount(t, d) > 0 {
				return false, inverseReason(explain, g.key), 0
			}
		}
	}
	return true, "", sum
}

func inverseReason(explain bool, key string) string {
	if !explain {
		return fastFail
	}
	return fmt.Sprintf("pod anti-affinity of scheduled pods on %s excludes this pod", key)
}

func (s *solver) reason(explain bool, c *constraint, d dom) string {
	if !explain {
		return fastFail
	}
	if !c.group.hostname && d < 0 && c.kind != kindAnti {
		return fmt.Sprintf("%s not satisfied: node has no %s label", c.describe(), c.group.key)
	}
	if c.kind == kindSpread {
		return c.describe() + " would be exceeded"
	}
	return c.describe() + " not satisfied"
}

// checkConstraint evaluates one constraint at domain d of t (hostname
// constraints use t itself).
func (s *solver) checkConstraint(c *constraint, t *target, d dom) bool {
	g := c.group
	if !g.hostname && d < 0 {
		return c.kind == kindAnti
	}
	cnt := g.count(t, d)
	switch c.kind {
	case kindSpread:
		self := int32(0)
		if c.self {
			self = 1
		}
		minCount := int32(0)
		if !g.hostname {
			minCount = s.minCount(c)
		}
		return cnt+self-minCount <= c.maxSkew
	case kindAffinity:
		return cnt > 0 || c.self && g.total == 0
	}
	return cnt == 0
}

func (c *constraint) describe() string {
	switch c.kind {
	case kindSpread:
		if c.byDefault {
			// The pod's spec shows no spread: say where it comes from.
			return fmt.Sprintf("default topology spread (scheduler config) on %s (maxSkew %d)", c.group.key, c.maxSkew)
		}
		return fmt.Sprintf("topology spread on %s (maxSkew %d)", c.group.key, c.maxSkew)
	case kindAffinity:
		return "pod affinity on " + c.group.key
	}
	return "pod anti-affinity on " + c.group.key
}

// minCount is the smallest count over the domains the constraint spans;
// 0 when fewer than minDomains domains exist.
func (s *solver) minCount(c *constraint) int32 {
	u := s.universe(c)
	if len(u) == 0 || int32(len(u)) < c.minDomains {
		return 0
	}
	counts := c.group.match
	if c.group.filter != nil {
		counts = c.group.sure
	}
	m := int32(math.MaxInt32)
	for _, d := range u {
		n := int32(0)
		if int(d) < len(counts) {
			n = counts[d]
		}
		if n < m {
			m = n
		}
	}
	return m
}

// universe lists the domains of a spread constraint: values the key can
// take on any NodePool's nodes and on existing nodes, restricted by the
// node inclusion policies.
func (s *solver) universe(c *constraint) []dom {
	if c.ready {
		return c.universe
	}
	c.ready = true
	g := c.group
	seen := map[dom]bool{}
	for _, p := range s.pools {
		e := p.root
		if g.filter != nil {
			if g.filter.taints && p.taints.ToleratesPod(g.filter.tolerations) != nil {
				continue
			}
			if g.filter.reqs != nil {
				if p.reqs.Compatible(g.filter.reqs, s.wellKnown) != nil {
					continue
				}
				e = s.entryForIntersection(p, p.reqs, g.filter.reqs)
			}
		}
		for _, d := range s.domains(e, g.kid) {
			seen[d] = true
		}
	}
	for _, t := range s.existing {
		if g.filter != nil && !g.filter.passes(s, t) {
			continue
		}
		if d := s.targetDom(t, g.kid); d >= 0 {
			seen[d] = true
		}
	}
	for d := range seen {
		c.universe = append(c.universe, d)
	}
	sort.Slice(c.universe, func(i, j int) bool { return c.universe[i] < c.universe[j] })
	return c.universe
}
