package simulation

import (
	"fmt"
	"math"
	"sort"
)

// entryDomain is the single value key takes under e, "" if not fixed.
func entryDomain(e *entry, key string) string {
	if r := e.reqs[key]; r != nil && r.Len() == 1 {
		return r.Any()
	}
	return ""
}

// topoCheck evaluates v's topology constraints on t (whose requirements
// would become e). For a NodeClaim whose domain for a key is still open it
// picks the best allowed domain and returns e pinned to it. It returns nil
// and a reason when no domain is allowed.
func (s *solver) topoCheck(v *variant, t *target, e *entry) (*entry, string) {
	for _, key := range v.pinKeys {
		if t.existing != nil {
			if ok, reason, _ := s.checkDomain(v, t, key, t.domain(key)); !ok {
				return nil, reason
			}
			continue
		}
		if d := entryDomain(e, key); d != "" {
			if ok, reason, _ := s.checkDomain(v, t, key, d); !ok {
				return nil, reason
			}
			continue
		}
		doms := s.domains(e, key)
		if len(doms) == 0 {
			if ok, reason, _ := s.checkDomain(v, t, key, ""); !ok {
				return nil, reason
			}
			continue
		}
		best, reason := s.chooseDomain(v, t, e, key, doms)
		if best == nil {
			return nil, reason
		}
		e = best
	}
	for _, c := range v.constraints {
		if c.group.hostname {
			if ok, reason := s.checkConstraint(c, v, t, ""); !ok {
				return nil, reason
			}
		}
	}
	for _, g := range v.class.inverse {
		if g.hostname && g.ownerCount(t, "") > 0 {
			return nil, inverseReason(g.key)
		}
	}
	return e, ""
}

// chooseDomain picks among allowed domains: fewest pods of the pod's spread
// groups first (as kube-scheduler scores), then the cheapest current shape,
// then the domain fewer NodeClaims were pinned to, then by name.
func (s *solver) chooseDomain(v *variant, t *target, e *entry, key string, doms []string) (*entry, string) {
	var best *entry
	var bestSum int32
	bestPrice := math.Inf(1)
	bestPinned := 0
	firstReason := ""
	for _, d := range doms {
		ok, reason, sum := s.checkDomain(v, t, key, d)
		if !ok {
			if firstReason == "" {
				firstReason = reason
			}
			continue
		}
		pe := s.pin(e, key, d)
		price := math.Inf(1)
		if t.entry != nil && t.id < len(s.targets) && s.targets[t.id] == t {
			price = pe.price[t.cur]
		} else if len(pe.order) > 0 {
			price = pe.price[pe.order[0]]
		}
		pinned := s.pinned[key+"="+d]
		better := best == nil || sum < bestSum ||
			sum == bestSum && (price < bestPrice || price == bestPrice && pinned < bestPinned)
		if better {
			best, bestSum, bestPrice, bestPinned = pe, sum, price, pinned
		}
	}
	return best, firstReason
}

// checkDomain evaluates every constraint of v on key at domain d.
func (s *solver) checkDomain(v *variant, t *target, key, d string) (bool, string, int32) {
	var sum int32
	for _, c := range v.constraints {
		if c.group.key != key {
			continue
		}
		if ok, reason := s.checkConstraint(c, v, t, d); !ok {
			return false, reason, 0
		}
		if c.kind == kindSpread {
			sum += c.group.count(t, d)
		}
	}
	if d != "" {
		for _, g := range v.class.inverse {
			if g.key == key && g.ownerCount(t, d) > 0 {
				return false, inverseReason(key), 0
			}
		}
	}
	return true, "", sum
}

func inverseReason(key string) string {
	return fmt.Sprintf("pod anti-affinity of scheduled pods on %s excludes this pod", key)
}

// checkConstraint evaluates one constraint at domain d of t (hostname
// constraints use t itself).
func (s *solver) checkConstraint(c *constraint, v *variant, t *target, d string) (bool, string) {
	g := c.group
	if !g.hostname && d == "" {
		if c.kind == kindAnti {
			return true, ""
		}
		return false, fmt.Sprintf("node has no %s label for %s", g.key, c.describe())
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
			minCount = s.minCount(c, v)
		}
		if cnt+self-minCount > c.maxSkew {
			return false, c.describe() + " would be exceeded"
		}
	case kindAffinity:
		if cnt == 0 && !(c.self && g.total == 0) {
			return false, c.describe() + " not satisfied"
		}
	case kindAnti:
		if cnt > 0 {
			return false, c.describe() + " not satisfied"
		}
	}
	return true, ""
}

func (c *constraint) describe() string {
	switch c.kind {
	case kindSpread:
		return fmt.Sprintf("topology spread on %s (maxSkew %d)", c.group.key, c.maxSkew)
	case kindAffinity:
		return "pod affinity on " + c.group.key
	}
	return "pod anti-affinity on " + c.group.key
}

// minCount is the smallest count over the domains the constraint spans;
// 0 when fewer than minDomains domains exist.
func (s *solver) minCount(c *constraint, v *variant) int32 {
	u := s.universe(c)
	if len(u) == 0 || int32(len(u)) < c.minDomains {
		return 0
	}
	m := int32(math.MaxInt32)
	for _, d := range u {
		if n := c.group.match[d]; n < m {
			m = n
		}
	}
	return m
}

// universe lists the domains of a spread constraint: values the key can
// take on any NodePool's nodes and on existing nodes, restricted by the
// node inclusion policies.
func (s *solver) universe(c *constraint) []string {
	if c.ready {
		return c.universe
	}
	c.ready = true
	g := c.group
	seen := map[string]bool{}
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
				e = s.entryFor(p, p.reqs.Intersection(g.filter.reqs))
			}
		}
		for _, d := range s.domains(e, g.key) {
			seen[d] = true
		}
	}
	for _, t := range s.existing {
		if g.filter != nil && !g.filter.passes(s, t) {
			continue
		}
		if d := t.domain(g.key); d != "" {
			seen[d] = true
		}
	}
	for d := range seen {
		c.universe = append(c.universe, d)
	}
	sort.Strings(c.universe)
	return c.universe
}
