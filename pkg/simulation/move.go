package simulation

import (
	"slices"
)

// Which placed pods compaction may move from one NodeClaim to another.
//
// Emptying, shrinking and swapping (empty.go, shrink.go, swap.go) move
// pods after placement. A move must keep every constraint each pod was
// placed under, as Result.Order replays them: a moved pod keeps its
// position in that order and only its node changes. Pods free of topology
// ties move freely. A pod that topology groups count, or that has
// constraints of its own, moves when every check that sees it still
// holds:
//   - zone-like keys (anything but the hostname): both NodeClaims are
//     pinned to the same domain for every key the pod's constraints,
//     counting groups and anti-affinity terms name, so no zone-like count
//     changes at any point of the order;
//   - hostname groups counting the pod: the receiving NodeClaim holds no
//     owner of a required anti-affinity term matching it, and every pod
//     there placed after it whose hostname spread counts the group still
//     passes with one more matching pod before it (hostname spread
//     compares with zero, so fewer pods on the NodeClaim the pod leaves
//     never hurt); groups with a hostname affinity term or a node
//     inclusion filter pin their pods;
//   - the pod's own hostname constraints: only spread, checked against
//     the pods placed before it on the receiving NodeClaim; a pod with a
//     hostname (anti-)affinity term of its own, or owning a required
//     anti-affinity term on the hostname, stays.
//
// Each check looks at the NodeClaims as they are when the move is made,
// so any sequence of checked moves keeps every replayed check true.

// hostRule is what moving a pod counted by a hostname group must respect.
type hostRule struct {
	// spread is set when some pod has a hostname spread constraint on
	// the group (spreadRoom then checks the receiving NodeClaim).
	spread bool
	// pinned is set when the group's pods must not move at all.
	pinned bool
}

// moveInfo caches, per shared variant (variant.shared), what a move of one
// of its pods checks.
type moveInfo struct {
	ready bool
	// stays is set when the pod can never move.
	stays bool
	// free is set when the pod has no topology tie at all.
	free bool
	// keys are the zone-like topology keys both NodeClaims must agree on.
	keys []int
	// counted are the hostname groups counting the pod.
	counted []*group
	// inverse are the hostname groups whose anti-affinity owners exclude it.
	inverse []*group
	// spread are the pod's own hostname spread constraints.
	spread []*constraint
}

// hostRules computes the per-group rules once per solve.
func (s *solver) hostRules() []hostRule {
	if s.rules != nil {
		return s.rules
	}
	s.rules = make([]hostRule, len(s.topology.groups))
	for _, g := range s.topology.groups {
		if g.filter != nil {
			s.rules[g.id].pinned = true
		}
	}
	for _, v := range s.variants {
		for _, c := range v.constraints {
			g := c.group
			if !g.hostname {
				continue
			}
			switch c.kind {
			case kindSpread:
				s.rules[g.id].spread = true
			case kindAffinity:
				s.rules[g.id].pinned = true
			}
		}
	}
	return s.rules
}

// moveInfoOf returns the cached move checks of v.
func (s *solver) moveInfoOf(v *variant) *moveInfo {
	if len(s.moveInfos) <= v.shared {
		s.moveInfos = slices.Grow(s.moveInfos, s.sharedVariants-len(s.moveInfos))[:s.sharedVariants]
	}
	mi := &s.moveInfos[v.shared]
	if mi.ready {
		return mi
	}
	mi.ready = true
	c := v.class
	mi.free = len(v.constraints) == 0 && len(c.counts) == 0 && len(c.owns) == 0 && len(c.inverse) == 0
	if mi.free {
		return mi
	}
	rules := s.hostRules()
	keys := map[int]bool{}
	zoneLike := func(g *group) bool {
		if g.filter != nil {
			mi.stays = true
		}
		if !g.hostname {
			keys[g.kid] = true
		}
		return !g.hostname
	}
	for _, con := range v.constraints {
		if zoneLike(con.group) {
			continue
		}
		if con.kind != kindSpread {
			mi.stays = true
		}
		mi.spread = append(mi.spread, con)
	}
	for _, g := range c.owns {
		if !zoneLike(g) {
			mi.stays = true
		}
	}
	for _, g := range c.counts {
		if zoneLike(g) {
			continue
		}
		if rules[g.id].pinned {
			mi.stays = true
		}
		mi.counted = append(mi.counted, g)
	}
	for _, g := range c.inverse {
		if !zoneLike(g) {
			mi.inverse = append(mi.inverse, g)
		}
	}
	for k := range keys {
		mi.keys = append(mi.keys, k)
	}
	return mi
}

// canLeave reports whether pi may ever move off its NodeClaim.
func (s *solver) canLeave(pi *podInfo) bool {
	return !s.moveInfoOf(pi.variant).stays
}

// canJoin reports whether pi may move from NodeClaim from to NodeClaim to
// as far as topology goes (resources, requirements and ports are checked
// by takes).
func (s *solver) canJoin(pi *podInfo, from, to *target) bool {
	mi := s.moveInfoOf(pi.variant)
	if mi.free {
		return true
	}
	if mi.stays {
		return false
	}
	if !s.sameDomains(mi, from, to) {
		return false
	}
	for _, g := range mi.inverse {
		if g.ownerCount(to, noDom) > 0 {
			return false
		}
	}
	for _, g := range mi.counted {
		if s.hostRules()[g.id].spread && !s.spreadRoom(g, to, pi.seq) {
			return false
		}
	}
	for _, c := range mi.spread {
		self := int32(0)
		if c.self {
			self = 1
		}
		if countBefore(c.group, to, pi.seq)+self > c.maxSkew {
			return false
		}
	}
	return true
}

// sameDomains reports whether from and to are pinned to the same domain
// for every zone-like key of mi.
func (s *solver) sameDomains(mi *moveInfo, from, to *target) bool {
	for _, kid := range mi.keys {
		if d := s.entryDom(from.entry, kid); d < 0 || d != s.entryDom(to.entry, kid) {
			return false
		}
	}
	return true
}

// spreadRoom reports whether one more pod matching hostname group g,
// placed at position seq of the order, keeps the spread check of every
// pod of t placed after it whose spread constraint counts g.
func (s *solver) spreadRoom(g *group, t *target, seq int) bool {
	for _, q := range t.pods {
		if q.seq < seq {
			continue
		}
		for _, c := range q.variant.constraints {
			if c.group != g || c.kind != kindSpread {
				continue
			}
			self := int32(0)
			if c.self {
				self = 1
			}
			if countBefore(g, t, q.seq)+1+self > c.maxSkew {
				return false
			}
		}
	}
	return true
}

// countBefore counts the pods on t that g matches placed before position
// seq of the order.
func countBefore(g *group, t *target, seq int) int32 {
	n := int32(0)
	for _, r := range t.pods {
		if r.seq < seq && slices.Contains(r.class.counts, g) {
			n++
		}
	}
	return n
}

// moveCounts moves pi's hostname group counts from one NodeClaim to
// another (zone-like counts stay: both are in the same domains).
func (s *solver) moveCounts(pi *podInfo, from, to *target) {
	for _, g := range s.moveInfoOf(pi.variant).counted {
		g.hostMatch = grow(g.hostMatch, max(from.id, to.id))
		g.hostMatch[from.id]--
		g.hostMatch[to.id]++
	}
}
