package simulation

import "github.com/karp-autoscaler/karp/pkg/scheduling"

// CSI volume limits (kube-scheduler's NodeVolumeLimits, as upstream
// Karpenter applies it): a node attaches at most its CSINode's
// allocatable count of volumes per CSI driver, so a pod whose claims would
// take an existing node over that count does not go there; it goes to
// another node or to a new NodeClaim. The rule is
// scheduling.VolumeLimits.ExceededBy; the solver applies it on interned
// ids (volumeFit's test checks that both agree).
//
// Only existing and in-flight nodes are checked, and only those whose
// CSINode reported limits (Node.VolumeLimits). A NodeClaim this solve
// opens has no CSINode yet, so its limits are unknown and it takes any
// number of claims, as upstream: should the pods' claims outnumber what
// the launched node can attach, kube-scheduler leaves the excess pending
// and the next pass, which then sees the node's CSINode, places them
// elsewhere.
//
// Pods without claims of a limited driver cost nothing, and a solve with
// no limited node does no lookup at all. Volumes are per pod (each
// replica of a StatefulSet has its own claims), so they are not part of a
// pod's class; they live beside the solver's pods and targets, not in
// them, so solves without limits carry nothing extra per pod. A pod with
// claims is checked against every limited node it could go to, so the
// check works on small ints and slices: a node with room for all of a
// pod's claims answers at once, and one without looks its claims up in a
// short slice.

// volumeIndex interns the drivers some node limits and the claims of
// those drivers.
type volumeIndex struct {
	drivers map[string]int
	claims  map[string]int32
	nodes   []*nodeVolumes // by target id; nil for nodes without limits
}

// nodeVolumes are an existing node's limits and attached claims.
type nodeVolumes struct {
	limit   []int     // by driver id; -1 (or beyond the end): not limited
	used    [][]int32 // by driver id: the claims attached
	minRoom int       // the least room any limited driver has left
}

// claimRef is one claim of a limited driver.
type claimRef struct {
	driver int
	claim  int32
}

// addVolumeLimits records, for the existing nodes with limits, their
// limits and the claims their pods attach (drivers first, so refs knows
// every driver some node limits).
func (s *solver) addVolumeLimits() {
	for _, t := range s.existing {
		if t.existing.VolumeLimits == nil {
			continue
		}
		if s.volumes == nil {
			s.volumes = &volumeIndex{drivers: map[string]int{}, claims: map[string]int32{}, nodes: make([]*nodeVolumes, len(s.existing))}
		}
		nv := &nodeVolumes{}
		for driver, limit := range t.existing.VolumeLimits {
			d, ok := s.volumes.drivers[driver]
			if !ok {
				d = len(s.volumes.drivers)
				s.volumes.drivers[driver] = d
			}
			for len(nv.limit) <= d {
				nv.limit = append(nv.limit, -1)
				nv.used = append(nv.used, nil)
			}
			nv.limit[d] = limit
		}
		s.volumes.nodes[t.id] = nv
	}
	if s.volumes == nil {
		return
	}
	for _, t := range s.existing {
		nv := s.volumes.node(t)
		if nv == nil {
			continue
		}
		for _, p := range t.existing.Pods {
			if !terminal(p) {
				nv.attach(s.volumes.refs(s.in.PodVolumes[p.UID]))
			}
		}
		nv.refresh()
	}
}

func (vi *volumeIndex) node(t *target) *nodeVolumes {
	if t.id >= len(vi.nodes) {
		return nil
	}
	return vi.nodes[t.id]
}

// refs interns the claims of limited drivers among vols; nil when none.
func (vi *volumeIndex) refs(vols scheduling.Volumes) []claimRef {
	var out []claimRef
	for driver, claims := range vols {
		d, limited := vi.drivers[driver]
		if !limited {
			continue
		}
		for claim := range claims {
			id, ok := vi.claims[claim]
			if !ok {
				id = int32(len(vi.claims))
				vi.claims[claim] = id
			}
			out = append(out, claimRef{driver: d, claim: id})
		}
	}
	return out
}

// podClaims are the claims p attaches of drivers some node limits.
func (s *solver) podClaims(p *podInfo) []claimRef {
	if s.volumes == nil {
		return nil
	}
	return s.volumes.refs(s.in.PodVolumes[p.pod.UID])
}

// volumesFit reports whether claims cs stay within t's limits (callers
// skip it for pods without claims).
func (s *solver) volumesFit(t *target, cs []claimRef) bool {
	nv := s.volumes.node(t)
	return nv == nil || nv.fits(cs)
}

// attach records claims cs on t once a pod is placed there.
func (s *solver) attach(t *target, cs []claimRef) {
	if cs == nil {
		return
	}
	if nv := s.volumes.node(t); nv != nil {
		nv.attach(cs)
		nv.refresh()
	}
}

func (nv *nodeVolumes) limited(d int) bool { return d < len(nv.limit) && nv.limit[d] >= 0 }

// fits is ExceededBy's rule: for each limited driver the pod brings a new
// claim to, the claims attached plus the new ones stay within the limit.
func (nv *nodeVolumes) fits(cs []claimRef) bool {
	if len(cs) <= nv.minRoom {
		return true
	}
	for i, c := range cs {
		if !nv.limited(c.driver) || firstOfDriver(cs, i) != i {
			continue
		}
		have := len(nv.used[c.driver])
		count := have
		for _, o := range cs[i:] {
			if o.driver == c.driver && !contains(nv.used[c.driver], o.claim) {
				count++
			}
		}
		if count > have && count > nv.limit[c.driver] {
			return false
		}
	}
	return true
}

func (nv *nodeVolumes) attach(cs []claimRef) {
	for _, c := range cs {
		if nv.limited(c.driver) && !contains(nv.used[c.driver], c.claim) {
			nv.used[c.driver] = append(nv.used[c.driver], c.claim)
		}
	}
}

// refresh recomputes minRoom after claims were attached.
func (nv *nodeVolumes) refresh() {
	nv.minRoom = int(^uint(0) >> 1)
	for d, limit := range nv.limit {
		if limit >= 0 {
			nv.minRoom = min(nv.minRoom, limit-len(nv.used[d]))
		}
	}
}

func firstOfDriver(cs []claimRef, i int) int {
	for j := range cs[:i] {
		if cs[j].driver == cs[i].driver {
			return j
		}
	}
	return i
}

func contains(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
