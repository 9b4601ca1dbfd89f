package simulation

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// group counts, per topology domain, the pods a selector matches (match)
// and the pods owning a required anti-affinity term with that selector
// (owners, for inverse anti-affinity). Groups are shared by every pod whose
// term has the same key, namespaces, selector and node filter.
type group struct {
	id         int
	key        string
	kid        int
	hostname   bool
	anti       bool             // some pod owns a required anti-affinity term on it
	namespaces sets.Set[string] // nil: every namespace
	selector   labels.Selector
	filter     *nodeFilter
	match      []int32 // by domain: pods on nodes that pass the filter or may pass it
	sure       []int32 // by domain, filtered groups only: pods on nodes that surely pass
	owners     []int32 // by domain
	hostMatch  []int32 // by target id
	hostOwners []int32
	total      int32
	elig       []*eligList // hostname groups: NodeClaims whose count is still low
}

// eligList tracks the NodeClaims whose count in a hostname group is at most
// threshold. Counts only grow, so a NodeClaim leaves the list for good; this
// lets pods with hostname anti-affinity or spread skip full NodeClaims
// without scanning them.
type eligList struct {
	threshold int32
	ts        []*target // by id
}

// nodeFilter restricts which nodes a spread constraint counts pods on
// (nodeAffinityPolicy and nodeTaintsPolicy Honor).
type nodeFilter struct {
	reqs        scheduling.Requirements // nil: node affinity ignored
	tolerations []corev1.Toleration
	taints      bool // honor taints
	cache       map[int]int
}

func (g *group) matches(namespace string, podLabels labels.Set) bool {
	if g.namespaces != nil && !g.namespaces.Has(namespace) {
		return false
	}
	return g.selector.Matches(podLabels)
}

func (g *group) count(t *target, d dom) int32 {
	if g.hostname {
		if t.id < len(g.hostMatch) {
			return g.hostMatch[t.id]
		}
		return 0
	}
	if d < 0 || int(d) >= len(g.match) {
		return 0
	}
	return g.match[d]
}

func (g *group) ownerCount(t *target, d dom) int32 {
	if g.hostname {
		if t.id < len(g.hostOwners) {
			return g.hostOwners[t.id]
		}
		return 0
	}
	if d < 0 || int(d) >= len(g.owners) {
		return 0
	}
	return g.owners[d]
}

func grow(s []int32, id int) []int32 {
	for len(s) <= id {
		s = append(s, 0)
	}
	return s
}

// recordMatch counts a pod matching the selector placed on t. With a node
// filter, a NodeClaim whose instance type is still open may or may not pass
// it: such pods raise the upper count (match) but not the sure count, so a
// spread check (own domain's upper count against the smallest sure count)
// holds whatever types the NodeClaims end up with.
func (g *group) recordMatch(s *solver, t *target) {
	if g.filter != nil {
		switch g.filter.outcome(s, t) {
		case filterNo:
			return
		case filterYes:
			if d := s.targetDom(t, g.kid); d >= 0 && !g.hostname {
				g.sure = grow(g.sure, int(d))
				g.sure[d]++
			}
		}
	}
	if g.hostname {
		g.hostMatch = grow(g.hostMatch, t.id)
		g.hostMatch[t.id]++
		g.total++
		for _, l := range g.elig {
			if g.hostMatch[t.id] == l.threshold+1 {
				l.remove(t)
			}
		}
		return
	}
	if d := s.targetDom(t, g.kid); d >= 0 {
		g.match = grow(g.match, int(d))
		g.match[d]++
		g.total++
	}
}

// recordOwner counts a pod owning this group's anti-affinity term on t.
func (g *group) recordOwner(s *solver, t *target) {
	if g.hostname {
		g.hostOwners = grow(g.hostOwners, t.id)
		g.hostOwners[t.id]++
		return
	}
	if d := s.targetDom(t, g.kid); d >= 0 {
		g.owners = grow(g.owners, int(d))
		g.owners[d]++
	}
}

// Filter outcomes on a node or NodeClaim.
const (
	filterNo = iota + 1
	filterYes
	filterMaybe
)

// passes reports whether the node may pass the filter.
func (f *nodeFilter) passes(s *solver, t *target) bool { return f.outcome(s, t) != filterNo }

// outcome says whether t passes the filter: existing nodes surely do or do
// not; a NodeClaim may be undecided while its instance type is open.
func (f *nodeFilter) outcome(s *solver, t *target) int {
	cacheKey := t.id
	if t.existing == nil {
		cacheKey = -1 - t.entry.id
	}
	if v, ok := f.cache[cacheKey]; ok {
		return v
	}
	out := filterYes
	if f.reqs != nil {
		switch {
		case t.existing != nil:
			if t.nodeReqs.StrictlyCompatible(f.reqs) != nil {
				out = filterNo
			}
		case t.entry.reqs.Compatible(f.reqs, s.wellKnown) != nil:
			out = filterNo
		case !surelySatisfies(t.entry.reqs, f.reqs, s.wellKnown):
			out = filterMaybe
		}
	}
	if out != filterNo && f.taints && t.taints().ToleratesPod(f.tolerations) != nil {
		out = filterNo
	}
	f.cache[cacheKey] = out
	return out
}

// surelySatisfies reports whether every node matching have satisfies want:
// each key of want is fixed in have to values want allows, or is a key no
// node of have will carry while want accepts its absence.
func surelySatisfies(have, want scheduling.Requirements, wellKnown sets.Set[string]) bool {
	for k, w := range want {
		h := have[k]
		if h == nil {
			if !w.AcceptsAbsent() || wellKnown.Has(k) {
				return false
			}
			continue
		}
		vals := h.Values()
		if h.IsComplement() || len(vals) == 0 || h.AcceptsAbsent() && !w.AcceptsAbsent() {
			return false
		}
		for _, v := range vals {
			if !w.Has(v) {
				return false
			}
		}
	}
	return true
}

// topology interns groups.
type topology struct {
	groups []*group
	byKey  map[string]*group
	nsLbls map[string]labels.Set
	// selectors interns term selectors by content (appendSelectorKey): most
	// classes of a workload share a handful, and parsing one is costly.
	selectors map[string]selector
	selBuf    []byte
	// single interns the one-namespace sets of spread constraints and
	// plain affinity terms (never modified once built).
	single map[string]sets.Set[string]
}

// selector is a parsed term selector and its String, the group key part.
type selector struct {
	sel labels.Selector
	str string
}

func newTopology(namespaces []*corev1.Namespace) *topology {
	t := &topology{byKey: map[string]*group{}, nsLbls: map[string]labels.Set{}, selectors: map[string]selector{}, single: map[string]sets.Set[string]{}}
	for _, ns := range namespaces {
		t.nsLbls[ns.Name] = labels.Set(ns.Labels)
	}
	return t
}

func (s *solver) group(key string, namespaces sets.Set[string], sel selector, filter *nodeFilter) *group {
	t := s.topology
	id := key + "|" + nsKey(namespaces) + "|" + sel.str + "|" + filterKey(filter)
	if g, ok := t.byKey[id]; ok {
		return g
	}
	g := &group{id: len(t.groups), key: key, kid: s.keyID(key), hostname: key == corev1.LabelHostname, namespaces: namespaces,
		selector: sel.sel, filter: filter}
	t.groups = append(t.groups, g)
	t.byKey[id] = g
	return g
}

// only returns the interned set holding just ns.
func (t *topology) only(ns string) sets.Set[string] {
	if set, ok := t.single[ns]; ok {
		return set
	}
	set := sets.New(ns)
	t.single[ns] = set
	return set
}

func nsKey(ns sets.Set[string]) string {
	if ns == nil {
		return "*"
	}
	if len(ns) == 1 {
		for n := range ns {
			return n
		}
	}
	return strings.Join(sets.List(ns), ",")
}

func filterKey(f *nodeFilter) string {
	if f == nil {
		return ""
	}
	var b strings.Builder
	if f.reqs != nil {
		b.WriteString(f.reqs.String())
	}
	if f.taints {
		fmt.Fprintf(&b, "|taints:%v", f.tolerations)
	}
	return b.String()
}

// selectorFor is parseSelector interned by content.
func (t *topology) selectorFor(ls *metav1.LabelSelector, podLabels map[string]string, matchKeys, mismatchKeys []string) selector {
	t.selBuf = appendSelectorKey(t.selBuf[:0], ls, podLabels, matchKeys, mismatchKeys)
	if sel, ok := t.selectors[string(t.selBuf)]; ok {
		return sel
	}
	parsed := parseSelector(ls, podLabels, matchKeys, mismatchKeys)
	out := selector{sel: parsed, str: parsed.String()}
	t.selectors[string(t.selBuf)] = out
	return out
}

// appendSelectorKey appends what parseSelector reads: the selector's
// labels (sorted) and expressions (in order), then the pod's values of
// matchKeys and mismatchKeys. Fields end in 0, groups in 1; a nil selector
// is a lone 2.
func appendSelectorKey(b []byte, ls *metav1.LabelSelector, podLabels map[string]string, matchKeys, mismatchKeys []string) []byte {
	if ls == nil {
		return append(b, 2)
	}
	var small [8]string
	keys := small[:0]
	for k := range ls.MatchLabels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b = append(append(append(append(b, k...), 0), ls.MatchLabels[k]...), 0)
	}
	b = append(b, 1)
	for _, e := range ls.MatchExpressions {
		b = append(append(append(append(b, e.Key...), 0), e.Operator...), 0)
		for _, v := range e.Values {
			b = append(append(b, v...), 0)
		}
		b = append(b, 1)
	}
	for _, list := range [...][]string{matchKeys, mismatchKeys} {
		b = append(b, 1)
		for _, k := range list {
			b = append(append(b, k...), 0)
			if v, ok := podLabels[k]; ok {
				b = append(append(append(b, '='), v...), 0)
			}
		}
	}
	return b
}

// parseSelector builds a term's selector, adding matchLabelKeys (In the
// pod's value) and mismatchLabelKeys (NotIn the pod's value).
func parseSelector(ls *metav1.LabelSelector, podLabels map[string]string, matchKeys, mismatchKeys []string) labels.Selector {
	if ls == nil {
		return labels.Nothing()
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return labels.Nothing()
	}
	for _, k := range matchKeys {
		if v, ok := podLabels[k]; ok {
			if r, err := labels.NewRequirement(k, selection.In, []string{v}); err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	for _, k := range mismatchKeys {
		if v, ok := podLabels[k]; ok {
			if r, err := labels.NewRequirement(k, selection.NotIn, []string{v}); err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	return sel
}

// termNamespaces resolves an affinity term's namespaces: the listed ones
// plus those the namespaceSelector matches; the pod's own when both are
// empty; nil (all) for an empty namespaceSelector.
func (t *topology) termNamespaces(podNS string, term *corev1.PodAffinityTerm) sets.Set[string] {
	if term.NamespaceSelector == nil && len(term.Namespaces) == 0 {
		return t.only(podNS)
	}
	out := sets.New(term.Namespaces...)
	if term.NamespaceSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(term.NamespaceSelector)
		if err == nil {
			if sel.Empty() {
				return nil
			}
			names := make([]string, 0, len(t.nsLbls))
			for n := range t.nsLbls {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				if sel.Matches(t.nsLbls[n]) {
					out.Insert(n)
				}
			}
		}
	}
	return out
}

func (l *eligList) remove(t *target) {
	i := sort.Search(len(l.ts), func(i int) bool { return l.ts[i].id >= t.id })
	if i < len(l.ts) && l.ts[i] == t {
		l.ts = append(l.ts[:i], l.ts[i+1:]...)
	}
}

// eligible returns the list of NodeClaims whose count is at most threshold,
// building it on first use.
func (s *solver) eligible(g *group, threshold int32) *eligList {
	for _, l := range g.elig {
		if l.threshold == threshold {
			return l
		}
	}
	l := &eligList{threshold: threshold}
	for _, t := range s.claims {
		if !t.gone() && g.count(t, noDom) <= threshold {
			l.ts = append(l.ts, t)
		}
	}
	if len(g.elig) == 0 {
		s.eligibleGroups = append(s.eligibleGroups, g)
	}
	g.elig = append(g.elig, l)
	return l
}

// hostCandidates returns the smallest eligibility list among v's hostname
// anti-affinity and spread constraints, or nil when v has none.
func (s *solver) hostCandidates(v *variant) []*target {
	var best *eligList
	for _, c := range v.constraints {
		if !c.group.hostname || c.kind == kindAffinity {
			continue
		}
		threshold := int32(0)
		if c.kind == kindSpread {
			threshold = c.maxSkew
			if c.self {
				threshold--
			}
		}
		if threshold < 0 {
			return []*target{}
		}
		if l := s.eligible(c.group, threshold); best == nil || len(l.ts) < len(best.ts) {
			best = l
		}
	}
	if best == nil {
		return nil
	}
	return best.ts
}
