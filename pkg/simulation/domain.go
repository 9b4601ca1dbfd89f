package simulation

// dom is an interned topology domain value. Topology keys and values are
// interned so the hot loop indexes slices instead of hashing strings.
type dom = int32

const (
	noDom      dom = -1 // unknown or absent
	unknownDom dom = -2 // not computed yet
)

func pinKey(kid int, d dom) int64 { return int64(kid)<<32 | int64(uint32(d)) }

func (s *solver) keyID(key string) int {
	if id, ok := s.topoKeyIDs[key]; ok {
		return id
	}
	s.topoKeyIDs[key] = len(s.topoKeys)
	s.topoKeys = append(s.topoKeys, key)
	return len(s.topoKeys) - 1
}

func (s *solver) valID(v string) dom {
	if id, ok := s.domainIDs[v]; ok {
		return id
	}
	s.domainIDs[v] = dom(len(s.domainValues))
	s.domainValues = append(s.domainValues, v)
	return dom(len(s.domainValues) - 1)
}

// entryDom is the single value key kid takes under e, noDom if not fixed.
func (s *solver) entryDom(e *entry, kid int) dom {
	for len(e.dom) <= kid {
		e.dom = append(e.dom, unknownDom)
	}
	if d := e.dom[kid]; d != unknownDom {
		return d
	}
	d := noDom
	if r := e.reqs[s.topoKeys[kid]]; r != nil && r.Len() == 1 {
		d = s.valID(r.Any())
	}
	e.dom[kid] = d
	return d
}

// targetDom is t's domain for key kid, noDom when unknown or absent.
func (s *solver) targetDom(t *target, kid int) dom {
	if t.existing == nil {
		return s.entryDom(t.entry, kid)
	}
	for len(t.doms) <= kid {
		t.doms = append(t.doms, unknownDom)
	}
	if d := t.doms[kid]; d != unknownDom {
		return d
	}
	d := noDom
	key := s.topoKeys[kid]
	if v, ok := t.existing.Labels[key]; ok {
		d = s.valID(v)
	} else if r := t.nodeReqs[key]; r != nil && r.Len() == 1 {
		d = s.valID(r.Any())
	}
	t.doms[kid] = d
	return d
}
