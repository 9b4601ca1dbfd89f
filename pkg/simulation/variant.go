package simulation

import (
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// level is one step of the relaxation ladder.
type level struct {
	term     int  // required node affinity term in use
	dropAff  int  // preferred pod affinity terms dropped (heaviest first)
	dropAnti int  // preferred pod anti-affinity terms dropped
	nodePref int  // preferred node affinity term treated as required (len = none)
	dropTSC  int  // ScheduleAnyway spread constraints dropped
	tolPNS   bool // PreferNoSchedule taints tolerated
}

// podTerms holds a pod's constraints split into required and preferred.
type podTerms struct {
	base      scheduling.Requirements
	terms     []scheduling.Requirements
	nodePrefs []scheduling.Requirements
	hardTSC   []corev1.TopologySpreadConstraint
	softTSC   []corev1.TopologySpreadConstraint
	reqAff    []corev1.PodAffinityTerm
	prefAff   []corev1.PodAffinityTerm
	reqAnti   []corev1.PodAffinityTerm
	prefAnti  []corev1.PodAffinityTerm
}

func splitTerms(pod *corev1.Pod) *podTerms {
	pt := &podTerms{base: scheduling.NewLabelRequirements(pod.Spec.NodeSelector)}
	for _, tsc := range pod.Spec.TopologySpreadConstraints {
		if tsc.WhenUnsatisfiable == corev1.ScheduleAnyway {
			pt.softTSC = append(pt.softTSC, tsc)
		} else {
			pt.hardTSC = append(pt.hardTSC, tsc)
		}
	}
	a := pod.Spec.Affinity
	if a != nil && a.NodeAffinity != nil {
		if r := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
			for _, t := range r.NodeSelectorTerms {
				pt.terms = append(pt.terms, termRequirements(t))
			}
		}
		prefs := append([]corev1.PreferredSchedulingTerm(nil), a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution...)
		sort.SliceStable(prefs, func(i, j int) bool { return prefs[i].Weight > prefs[j].Weight })
		for _, p := range prefs {
			pt.nodePrefs = append(pt.nodePrefs, scheduling.NewNodeSelectorRequirements(p.Preference.MatchExpressions...))
		}
	}
	if len(pt.terms) == 0 {
		pt.terms = []scheduling.Requirements{{}}
	}
	if a != nil && a.PodAffinity != nil {
		pt.reqAff = a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		pt.prefAff = sortedWeighted(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if a != nil && a.PodAntiAffinity != nil {
		pt.reqAnti = a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		pt.prefAnti = sortedWeighted(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	return pt
}

// termRequirements converts a node selector term. matchFields can only
// name a node (metadata.name); it becomes a hostname requirement, which
// existing nodes satisfy by their hostname label and new NodeClaims never do.
func termRequirements(t corev1.NodeSelectorTerm) scheduling.Requirements {
	reqs := scheduling.NewNodeSelectorRequirements(t.MatchExpressions...)
	for _, f := range t.MatchFields {
		reqs.Add(scheduling.NewRequirement(corev1.LabelHostname, f.Operator, f.Values...))
	}
	return reqs
}

func sortedWeighted(in []corev1.WeightedPodAffinityTerm) []corev1.PodAffinityTerm {
	w := append([]corev1.WeightedPodAffinityTerm(nil), in...)
	sort.SliceStable(w, func(i, j int) bool { return w[i].Weight > w[j].Weight })
	out := make([]corev1.PodAffinityTerm, len(w))
	for i := range w {
		out[i] = w[i].PodAffinityTerm
	}
	return out
}

// ladder lists the relaxation levels in upstream order: drop required
// node-affinity terms until one is left, then preferred pod affinity, then
// preferred pod anti-affinity, then preferred node affinity (heaviest first,
// one at a time), then ScheduleAnyway spread, then tolerate
// PreferNoSchedule taints (only when some NodePool has one).
func (s *solver) ladder(pt *podTerms) []level {
	if s.in.Options.PreferencePolicy == PreferencePolicyIgnore {
		out := make([]level, len(pt.terms))
		for i := range pt.terms {
			out[i] = level{term: i, dropAff: len(pt.prefAff), dropAnti: len(pt.prefAnti), nodePref: len(pt.nodePrefs), dropTSC: len(pt.softTSC), tolPNS: true}
		}
		return out
	}
	l := level{tolPNS: !s.anyPreferNoSchedule}
	out := []level{l}
	step := func(mut func()) {
		mut()
		out = append(out, l)
	}
	for l.term < len(pt.terms)-1 {
		step(func() { l.term++ })
	}
	for l.dropAff < len(pt.prefAff) {
		step(func() { l.dropAff++ })
	}
	for l.dropAnti < len(pt.prefAnti) {
		step(func() { l.dropAnti++ })
	}
	for l.nodePref < len(pt.nodePrefs) {
		step(func() { l.nodePref++ })
	}
	for l.dropTSC < len(pt.softTSC) {
		step(func() { l.dropTSC++ })
	}
	if !l.tolPNS {
		step(func() { l.tolPNS = true })
	}
	return out
}

// relaxes reports whether level l gives up one of the pod's preferences
// (under PreferencePolicyIgnore nothing counts: none is honoured).
func (s *solver) relaxes(l level) bool {
	if s.in.Options.PreferencePolicy == PreferencePolicyIgnore {
		return false
	}
	return l.dropAff > 0 || l.dropAnti > 0 || l.nodePref > 0 || l.dropTSC > 0 || (l.tolPNS && s.anyPreferNoSchedule)
}

func (s *solver) buildVariants(c *class, vols []scheduling.Requirements) {
	pt := c.podTerms()
	if len(vols) == 0 {
		vols = []scheduling.Requirements{{}}
	}
	for _, t := range pt.reqAnti {
		g := s.affinityConstraint(c, &t, kindAnti).group
		g.anti = true
		c.owns = append(c.owns, g)
	}
	for _, l := range s.ladder(pt) {
		required := pt.base.Intersection(pt.terms[l.term])
		reqs := required
		if l.nodePref < len(pt.nodePrefs) {
			reqs = reqs.Intersection(pt.nodePrefs[l.nodePref])
		}
		var cons []*constraint
		for i := range pt.hardTSC {
			cons = append(cons, s.spreadConstraint(c, &pt.hardTSC[i], required, true))
		}
		for i := l.dropTSC; i < len(pt.softTSC); i++ {
			cons = append(cons, s.spreadConstraint(c, &pt.softTSC[i], required, false))
		}
		for _, terms := range []struct {
			list []corev1.PodAffinityTerm
			kind constraintKind
		}{{pt.reqAff, kindAffinity}, {pt.prefAff[l.dropAff:], kindAffinity}, {pt.reqAnti, kindAnti}, {pt.prefAnti[l.dropAnti:], kindAnti}} {
			for i := range terms.list {
				cons = append(cons, s.affinityConstraint(c, &terms.list[i], terms.kind))
			}
		}
		for _, vol := range vols {
			v := &variant{id: len(s.variants), class: c, reqs: reqs.Intersection(vol), strictPNS: !l.tolPNS, constraints: cons,
				relaxed: s.relaxes(l), shared: s.sharedVariants}
			s.sharedVariants++
			s.variants = append(s.variants, v)
			c.variants = append(c.variants, v)
		}
	}
}

// shareVariants gives c, whose pods differ from proto's only in their
// requests, the variants of proto: requirements, constraints and the
// caches of shape-level checks are the same, only the class (and so the
// requests) differs.
func (s *solver) shareVariants(c, proto *class) {
	c.proto = proto
	c.terms = proto.terms
	c.owns = proto.owns
	c.variants = s.newVariants(len(proto.variants))
	for i, pv := range proto.variants {
		v := c.variants[i]
		*v = variant{id: len(s.variants), class: c, reqs: pv.reqs, strictPNS: pv.strictPNS, relaxed: pv.relaxed,
			constraints: pv.constraints, shared: pv.shared}
		s.variants = append(s.variants, v)
	}
}

// variantBlock is how many variants newVariants allocates at once.
const variantBlock = 64

// newVariants returns n zero variants, allocated with others in blocks (a
// solve makes hundreds), and a slice of them no append can share.
func (s *solver) newVariants(n int) []*variant {
	if len(s.variantBlock) < n {
		s.variantBlock = make([]variant, max(n, variantBlock))
	}
	if cap(s.variantPtrs)-len(s.variantPtrs) < n {
		s.variantPtrs = make([]*variant, 0, max(n, variantBlock))
	}
	at := len(s.variantPtrs)
	s.variantPtrs = s.variantPtrs[:at+n]
	out := s.variantPtrs[at : at+n : at+n]
	for i := range out {
		out[i] = &s.variantBlock[i]
	}
	s.variantBlock = s.variantBlock[n:]
	return out
}

func (s *solver) spreadConstraint(c *class, tsc *corev1.TopologySpreadConstraint, required scheduling.Requirements, hard bool) *constraint {
	var filter *nodeFilter
	honorAffinity := tsc.NodeAffinityPolicy == nil || *tsc.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
	honorTaints := tsc.NodeTaintsPolicy != nil && *tsc.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
	if (honorAffinity && len(required) > 0) || honorTaints {
		filter = &nodeFilter{taints: honorTaints, cache: map[int]int{}}
		if honorAffinity && len(required) > 0 {
			filter.reqs = required
		}
		if honorTaints {
			filter.tolerations = c.tolerates
		}
	}
	sel := s.topology.selectorFor(tsc.LabelSelector, c.labels, tsc.MatchLabelKeys, nil)
	g := s.group(scheduling.NormalizeKey(tsc.TopologyKey), s.topology.only(c.namespace), sel, filter)
	con := &constraint{kind: kindSpread, group: g, maxSkew: tsc.MaxSkew, self: g.matches(c.namespace, c.labels), byDefault: c.defaultSpread}
	if hard && tsc.MinDomains != nil {
		con.minDomains = *tsc.MinDomains
	}
	return con
}

func (s *solver) affinityConstraint(c *class, term *corev1.PodAffinityTerm, kind constraintKind) *constraint {
	ns := s.topology.termNamespaces(c.namespace, term)
	sel := s.topology.selectorFor(term.LabelSelector, c.labels, term.MatchLabelKeys, term.MismatchLabelKeys)
	g := s.group(scheduling.NormalizeKey(term.TopologyKey), ns, sel, nil)
	return &constraint{kind: kind, group: g, self: g.matches(c.namespace, c.labels)}
}
