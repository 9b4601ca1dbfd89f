package simulation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// The values of a pending pod's effective zone besides a zone name
// (karpenter_scheduler_pending_pods_by_effective_zone_count).
const (
	// ZoneFlexible: more than one zone can take the pod.
	ZoneFlexible = "flexible"
	// ZoneNone: the pod's zone signals leave no zone.
	ZoneNone = "none"
)

// pendingByZone counts the Pending-phase pods among pods (headroom
// excluded) by effectiveZone, computed once per class. It must run after
// pendingPods, which counts the pods already bound into the spread groups,
// and before any placement.
func (s *solver) pendingByZone(pods []*podInfo) map[string]int {
	out := map[string]int{}
	byClass := map[*class]string{}
	for _, pi := range pods {
		if pi.pod.Status.Phase != corev1.PodPending || s.in.Headroom[pi.pod.UID] {
			continue
		}
		// Classes of one shape have the same effective zone.
		z, ok := byClass[pi.class.proto]
		if !ok {
			z = s.effectiveZone(pi.class.proto)
			byClass[pi.class.proto] = z
		}
		out[z]++
	}
	return out
}

// effectiveZone intersects a class's zone signals as the solve begins:
// the zones its required node selector and first required node-affinity
// term allow, the zones its volumes allow (the union over their
// alternatives), and the zones its zone spread constraints would accept a
// pod in given the pods already counted. One zone left is that zone;
// several, or no zone signal at all, is ZoneFlexible; none is ZoneNone.
// The candidates come from the first signal that names zones, in that
// order, as upstream computes the same gauge.
func (s *solver) effectiveZone(c *class) string {
	pt := c.podTerms()
	zoneReq := pt.base.Intersection(pt.terms[0]).Get(corev1.LabelTopologyZone)
	volZones := volumeZones(s.in.VolumeRequirements[c.pod.UID])
	spreadZones, ok := s.spreadZones(c)
	if !ok {
		return ZoneNone
	}
	var candidates []string
	switch {
	case zoneReq != nil && zoneReq.Operator() == corev1.NodeSelectorOpIn:
		candidates = zoneReq.Values()
	case volZones != nil:
		candidates = sets.List(volZones)
	case spreadZones != nil:
		candidates = sets.List(spreadZones)
	default:
		return ZoneFlexible
	}
	found := ""
	for _, z := range candidates {
		if zoneReq != nil && !zoneReq.Has(z) || volZones != nil && !volZones.Has(z) || spreadZones != nil && !spreadZones.Has(z) {
			continue
		}
		if found != "" {
			return ZoneFlexible
		}
		found = z
	}
	if found == "" {
		return ZoneNone
	}
	return found
}

// volumeZones is the union of the zones each volume alternative allows;
// nil when some alternative does not name zones (volumes then do not
// narrow the zone).
func volumeZones(alternatives []scheduling.Requirements) sets.Set[string] {
	if len(alternatives) == 0 {
		return nil
	}
	out := sets.New[string]()
	for _, alt := range alternatives {
		r := alt.Get(corev1.LabelTopologyZone)
		if r == nil || r.Operator() != corev1.NodeSelectorOpIn {
			return nil
		}
		out.Insert(r.Values()...)
	}
	return out
}

// spreadZones intersects, over the zone spread constraints of the class's
// strictest variant, the zones where one more matching pod keeps the skew
// within maxSkew. nil with ok when the class spreads over no zone; ok is
// false when some constraint accepts no zone.
func (s *solver) spreadZones(c *class) (sets.Set[string], bool) {
	if len(c.variants) == 0 {
		return nil, true
	}
	var out sets.Set[string]
	for _, con := range c.variants[0].constraints {
		if con.kind != kindSpread || con.group.key != corev1.LabelTopologyZone {
			continue
		}
		valid := sets.New[string]()
		for _, d := range s.universe(con) {
			if s.checkConstraint(con, nil, d) {
				valid.Insert(s.domainValues[d])
			}
		}
		if valid.Len() == 0 {
			return nil, false
		}
		if out == nil {
			out = valid
		} else {
			out = out.Intersection(valid)
		}
	}
	return out, true
}
