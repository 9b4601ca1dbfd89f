package simulation

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// addExisting turns nodes that are not being deleted into targets: their
// room is allocatable minus bound pods minus the DaemonSets that would land
// there but have no pod yet.
func (s *solver) addExisting() {
	nodes := make([]*Node, 0, len(s.in.Nodes))
	for _, n := range s.in.Nodes {
		if !n.MarkedForDeletion {
			nodes = append(nodes, n)
		}
	}
	sort.SliceStable(nodes, func(i, j int) bool {
		if nodes[i].Initialized != nodes[j].Initialized {
			return nodes[i].Initialized
		}
		return nodes[i].Name < nodes[j].Name
	})
	for _, n := range nodes {
		t := &target{id: len(s.targets), existing: n, closed: s.in.settlingClosed && n.Settling}
		t.nodeReqs = s.in.NodeCache.nodeRequirements(n)
		t.nodeTnts = n.Taints
		if !n.Initialized {
			t.nodeTnts = scheduling.Taints(n.Taints).WithoutEphemeral(n.StartupTaints)
		}
		t.used = make(scheduling.Vector, s.resources.Len())
		for _, p := range n.Pods {
			if !terminal(p) {
				t.used.Add(s.resources.Vector(s.in.NodeCache.requests(p, s.in.LimitRanges)))
				t.ports = append(t.ports, scheduling.PodHostPorts(p)...)
			}
		}
		t.free = s.resources.Vector(n.Allocatable)
		t.free.Sub(t.used)
		for _, d := range s.daemons {
			if d.landsOnNode(t.nodeReqs, t.nodeTnts) && !hasDaemonPod(d, n.Pods) {
				t.free.Sub(d.requests)
				t.ports = append(t.ports, d.ports...)
			}
		}
		s.targets = append(s.targets, t)
		s.existing = append(s.existing, t)
		for _, p := range n.Pods {
			if !counted(p) || p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity == nil {
				continue
			}
			for i := range p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				term := &p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i]
				ns := s.topology.termNamespaces(p.Namespace, term)
				sel := s.topology.selectorFor(term.LabelSelector, p.Labels, term.MatchLabelKeys, term.MismatchLabelKeys)
				g := s.group(scheduling.NormalizeKey(term.TopologyKey), ns, sel, nil)
				g.anti = true
				g.recordOwner(s, t)
			}
		}
	}
	s.addVolumeLimits()
}

func hasDaemonPod(d *daemon, pods []*corev1.Pod) bool {
	for _, p := range pods {
		if d.ownedBy(p) {
			return true
		}
	}
	return false
}

// linkGroups tells each class which groups count it and which anti-affinity
// groups block it, records the existing pods in every group, and derives the
// topology keys each variant must pin.
func (s *solver) linkGroups() {
	for _, c := range s.classes {
		if c.proto != c { // the shape's first class comes first
			c.counts, c.inverse = c.proto.counts, c.proto.inverse
			continue
		}
		for _, g := range s.topology.groups {
			if g.matches(c.namespace, c.labels) {
				c.counts = append(c.counts, g)
				if g.anti {
					c.inverse = append(c.inverse, g)
				}
			}
		}
	}
	for _, t := range s.existing {
		for _, p := range t.existing.Pods {
			if !counted(p) {
				continue
			}
			ls := labels.Set(p.Labels)
			for _, g := range s.topology.groups {
				if g.matches(p.Namespace, ls) {
					g.recordMatch(s, t)
				}
			}
		}
	}
	// A pod that some zone-like topology group counts (or that owns or is
	// blocked by such a term) fixes its NodeClaim's domain for that key when
	// placed, so every count is recorded in a definite domain. Upstream
	// leaves such NodeClaims open and its counts can drift from where the
	// node lands.
	for _, c := range s.classes {
		if c.proto != c {
			for i, v := range c.variants {
				v.pinKeys = c.proto.variants[i].pinKeys
			}
			continue
		}
		for _, v := range c.variants {
			s.linkPinKeys(v)
		}
	}
}

// linkPinKeys derives the zone-like topology keys v must pin.
func (s *solver) linkPinKeys(v *variant) {
	keys := map[int]bool{}
	add := func(g *group) {
		if !g.hostname {
			keys[g.kid] = true
		}
	}
	for _, c := range v.constraints {
		add(c.group)
	}
	for _, list := range [][]*group{v.class.counts, v.class.owns, v.class.inverse} {
		for _, g := range list {
			add(g)
		}
	}
	for k := range keys {
		v.pinKeys = append(v.pinKeys, k)
	}
	sort.Ints(v.pinKeys)
}
