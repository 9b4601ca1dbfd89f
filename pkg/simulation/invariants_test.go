package simulation

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// checkNamespaces holds namespace labels for the checker's
// namespaceSelector evaluation; set by checkInvariants.
var checkNamespaces = map[string]map[string]string{}

// checkNode is a node as the invariant checker sees it, built from the
// Result independently of the solver's internals.
type checkNode struct {
	name     string
	labels   map[string]string
	taints   []corev1.Taint
	alloc    corev1.ResourceList
	pods     []*corev1.Pod
	existing *Node
	pool     *karpv1.NodePool
	claim    *NodeClaim
}

// checkInvariants verifies every hard constraint of every placement by
// replaying Result.Order, and that every pod is either placed once or
// explained.
func checkInvariants(t *testing.T, in Input, res *Result) {
	t.Helper()
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	nodes, claimNodes := checkNodes(in, res)
	checkNamespaces = map[string]map[string]string{}
	for _, ns := range in.Namespaces {
		checkNamespaces[ns.Name] = ns.Labels
	}

	// 1. Every pod is placed exactly once or explained.
	seen := map[*corev1.Pod]int{}
	for _, pl := range res.Order {
		seen[pl.Pod]++
	}
	for _, pe := range res.PodErrors {
		seen[pe.Pod]++
		if pe.Status == nil || len(pe.Status.Reasons) == 0 {
			fail("pod %s unplaced without a reason", pe.Pod.Name)
		}
	}
	for _, p := range pendingOf(in) {
		if seen[p] != 1 {
			fail("pod %s appears %d times in Order+PodErrors", p.Name, seen[p])
		}
	}

	// 2. Replay placements in order, checking each against the state it saw.
	for _, pl := range res.Order {
		n := claimNodes[pl.NodeClaim]
		if pl.NodeClaim < 0 {
			n = nodes[pl.Node.Name]
		}
		for _, msg := range checkPlacement(in, nodes, n, pl.Pod) {
			fail("pod %s on %s: %s", pl.Pod.Name, n.name, msg)
		}
		n.pods = append(n.pods, pl.Pod)
	}

	// 3. Final resources, host ports and instance type lists.
	for _, n := range nodes {
		for _, msg := range checkCapacity(in, n) {
			fail("%s: %s", n.name, msg)
		}
	}
	for i, nc := range res.NodeClaims {
		for _, msg := range checkClaimTypes(in, nc) {
			fail("nodeclaim %d: %s", i, msg)
		}
	}
	// 4. Limits.
	for _, np := range in.NodePools {
		for _, msg := range checkLimits(in, res, np.NodePool) {
			fail("NodePool %s: %s", np.NodePool.Name, msg)
		}
	}
	// 5. CSI volume limits of existing nodes.
	for _, msg := range checkVolumeLimits(in, res) {
		fail("%s", msg)
	}
	if len(errs) > 0 {
		for _, e := range errs {
			t.Error(e)
		}
		t.FailNow()
	}
}

func pendingOf(in Input) []*corev1.Pod {
	out := append([]*corev1.Pod(nil), in.Pods...)
	for _, n := range in.Nodes {
		if n.MarkedForDeletion {
			for _, p := range n.Pods {
				if reschedulable(p) {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

func checkNodes(in Input, res *Result) (map[string]*checkNode, map[int]*checkNode) {
	nodes := map[string]*checkNode{}
	for _, n := range in.Nodes {
		if n.MarkedForDeletion {
			continue
		}
		cn := &checkNode{name: n.Name, labels: n.Labels, taints: n.Taints, alloc: n.Allocatable, existing: n}
		if !n.Initialized {
			cn.taints = scheduling.Taints(n.Taints).WithoutEphemeral(n.StartupTaints)
		}
		for _, p := range n.Pods {
			if counted(p) {
				cn.pods = append(cn.pods, p)
			}
		}
		nodes[n.Name] = cn
	}
	claimNodes := map[int]*checkNode{}
	for i, nc := range res.NodeClaims {
		name := fmt.Sprintf("nodeclaim-%d", i)
		lbls := map[string]string{corev1.LabelHostname: name}
		for k, v := range nc.NodePool.Spec.Template.ObjectMeta.Labels {
			lbls[k] = v
		}
		for k, v := range nc.InstanceType.Requirements.Labels() {
			lbls[k] = v
		}
		for k, v := range nc.Requirements.Labels() {
			if k != corev1.LabelInstanceTypeStable && k != scheduling.LabelCapacityType {
				lbls[k] = v
			}
		}
		lbls[corev1.LabelTopologyZone] = nc.Offering.Zone
		lbls[scheduling.LabelCapacityType] = nc.Offering.CapacityType
		lbls[corev1.LabelInstanceTypeStable] = nc.InstanceType.Name
		lbls[karpv1.NodePoolLabelKey] = nc.NodePool.Name
		cn := &checkNode{name: name, labels: lbls, taints: nc.NodePool.Spec.Template.Spec.Taints,
			alloc: nc.InstanceType.Allocatable, pool: nc.NodePool, claim: nc}
		nodes[name] = cn
		claimNodes[i] = cn
	}
	return nodes, claimNodes
}

// podNodeTerms are the pod's required node requirements: nodeSelector ∩
// each required term (ORed), crossed with its volume alternatives.
func podNodeTerms(in Input, p *corev1.Pod) []scheduling.Requirements {
	base := scheduling.NewLabelRequirements(p.Spec.NodeSelector)
	terms := []scheduling.Requirements{base}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		terms = nil
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			terms = append(terms, base.Intersection(termRequirements(term)))
		}
	}
	vols := in.VolumeRequirements[p.UID]
	if len(vols) == 0 {
		return terms
	}
	var out []scheduling.Requirements
	for _, t := range terms {
		for _, v := range vols {
			out = append(out, t.Intersection(v))
		}
	}
	return out
}

func matchesNode(terms []scheduling.Requirements, nodeLabels map[string]string) bool {
	nl := scheduling.NewLabelRequirements(nodeLabels)
	for _, t := range terms {
		if nl.StrictlyCompatible(t) == nil {
			return true
		}
	}
	return false
}

func checkPlacement(in Input, nodes map[string]*checkNode, n *checkNode, p *corev1.Pod) []string {
	var out []string
	if !matchesNode(podNodeTerms(in, p), n.labels) {
		out = append(out, "node affinity/selector not satisfied")
	}
	if err := scheduling.Taints(n.taints).ToleratesPod(p.Spec.Tolerations); err != nil {
		out = append(out, err.Error())
	}
	for _, tsc := range p.Spec.TopologySpreadConstraints {
		if tsc.WhenUnsatisfiable == corev1.DoNotSchedule {
			if msg := checkSpread(in, nodes, n, p, tsc); msg != "" {
				out = append(out, msg)
			}
		}
	}
	if a := p.Spec.Affinity; a != nil && a.PodAffinity != nil {
		for _, term := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if !affinityOK(nodes, n, p, term) {
				out = append(out, "pod affinity on "+term.TopologyKey+" not satisfied")
			}
		}
	}
	if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if countInDomain(nodes, n, term.TopologyKey, termMatcher(p, term)) > 0 {
				out = append(out, "pod anti-affinity on "+term.TopologyKey+" violated")
			}
		}
	}
	for _, other := range nodes {
		for _, q := range other.pods {
			if q.Spec.Affinity == nil || q.Spec.Affinity.PodAntiAffinity == nil {
				continue
			}
			for _, term := range q.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				v, ok := n.labels[term.TopologyKey]
				if ok && other.labels[term.TopologyKey] == v && termMatcher(q, term)(p) {
					out = append(out, fmt.Sprintf("pod %s's anti-affinity on %s excludes it", q.Name, term.TopologyKey))
				}
			}
		}
	}
	return out
}

func termMatcher(owner *corev1.Pod, term corev1.PodAffinityTerm) func(*corev1.Pod) bool {
	sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		sel = labels.Nothing()
	}
	ns := sets.New(term.Namespaces...)
	if len(ns) == 0 && term.NamespaceSelector == nil {
		ns.Insert(owner.Namespace)
	}
	nsSel := labels.Nothing()
	if term.NamespaceSelector != nil {
		nsSel, _ = metav1.LabelSelectorAsSelector(term.NamespaceSelector)
	}
	return func(q *corev1.Pod) bool {
		inNS := ns.Has(q.Namespace) || nsSel.Empty() && term.NamespaceSelector != nil || nsSel.Matches(labels.Set(checkNamespaces[q.Namespace]))
		return inNS && sel.Matches(labels.Set(q.Labels))
	}
}

func countInDomain(nodes map[string]*checkNode, n *checkNode, key string, match func(*corev1.Pod) bool) int {
	v, ok := n.labels[key]
	if !ok {
		return 0
	}
	c := 0
	for _, other := range nodes {
		if other.labels[key] != v {
			continue
		}
		for _, q := range other.pods {
			if match(q) {
				c++
			}
		}
	}
	return c
}

func affinityOK(nodes map[string]*checkNode, n *checkNode, p *corev1.Pod, term corev1.PodAffinityTerm) bool {
	if _, ok := n.labels[term.TopologyKey]; !ok {
		return false
	}
	match := termMatcher(p, term)
	if countInDomain(nodes, n, term.TopologyKey, match) > 0 {
		return true
	}
	if !match(p) {
		return false
	}
	for _, other := range nodes {
		for _, q := range other.pods {
			if match(q) {
				return false
			}
		}
	}
	return true
}

func checkSpread(in Input, nodes map[string]*checkNode, n *checkNode, p *corev1.Pod, tsc corev1.TopologySpreadConstraint) string {
	ls := tsc.LabelSelector.DeepCopy()
	for _, k := range tsc.MatchLabelKeys {
		if v, ok := p.Labels[k]; ok {
			ls.MatchExpressions = append(ls.MatchExpressions, metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{v}})
		}
	}
	sel, _ := metav1.LabelSelectorAsSelector(ls)
	match := func(q *corev1.Pod) bool { return q.Namespace == p.Namespace && sel.Matches(labels.Set(q.Labels)) }
	self := 0
	if match(p) {
		self = 1
	}
	terms := podNodeTerms(in, p)
	honor := tsc.NodeAffinityPolicy == nil || *tsc.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
	honorTaints := tsc.NodeTaintsPolicy != nil && *tsc.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
	tolerated := func(taints []corev1.Taint) bool {
		return !honorTaints || scheduling.Taints(taints).ToleratesPod(p.Spec.Tolerations) == nil
	}
	eligible := func(cn *checkNode) bool { return (!honor || matchesNode(terms, cn.labels)) && tolerated(cn.taints) }
	d, ok := n.labels[tsc.TopologyKey]
	if !ok {
		return "node has no " + tsc.TopologyKey + " label"
	}
	counts := map[string]int{}
	for _, cn := range nodes {
		if !eligible(cn) {
			continue
		}
		if v, ok := cn.labels[tsc.TopologyKey]; ok {
			for _, q := range cn.pods {
				if match(q) {
					counts[v]++
				}
			}
		}
	}
	minCount := 0
	if tsc.TopologyKey != corev1.LabelHostname {
		universe := spreadUniverse(in, nodes, tsc.TopologyKey, terms, honor, eligible, tolerated)
		minCount = -1
		for v := range universe {
			if minCount < 0 || counts[v] < minCount {
				minCount = counts[v]
			}
		}
		if minCount < 0 || tsc.MinDomains != nil && len(universe) < int(*tsc.MinDomains) {
			minCount = 0
		}
	}
	if counts[d]+self-minCount > int(tsc.MaxSkew) {
		return fmt.Sprintf("spread on %s exceeded: domain %s has %d, min %d", tsc.TopologyKey, d, counts[d], minCount)
	}
	return ""
}

func spreadUniverse(in Input, nodes map[string]*checkNode, key string, terms []scheduling.Requirements, honor bool,
	eligible func(*checkNode) bool, tolerated func([]corev1.Taint) bool) sets.Set[string] {
	u := sets.New[string]()
	for _, cn := range nodes {
		if cn.existing != nil && eligible(cn) {
			if v, ok := cn.labels[key]; ok {
				u.Insert(v)
			}
		}
	}
	for _, np := range in.NodePools {
		if !tolerated(np.NodePool.Spec.Template.Spec.Taints) {
			continue
		}
		poolReqs := poolRequirements(np.NodePool)
		for _, it := range np.InstanceTypes {
			if poolReqs.Intersects(it.Requirements) != nil {
				continue
			}
			if honor && !anyCompatible(terms, poolReqs.Intersection(it.Requirements), it) {
				continue
			}
			var vals []string
			if key == corev1.LabelTopologyZone {
				for _, o := range it.Offerings {
					if o.Available && o.CompatibleWith(poolReqs) {
						vals = append(vals, o.Zone)
					}
				}
			} else if r := poolReqs.Intersection(it.Requirements)[key]; r != nil {
				vals = r.Values()
			}
			for _, v := range vals {
				if !honor || anyAllows(terms, key, v) {
					u.Insert(v)
				}
			}
		}
	}
	return u
}

func anyAllows(terms []scheduling.Requirements, key, value string) bool {
	for _, t := range terms {
		if r := t[key]; r == nil || r.Has(value) {
			return true
		}
	}
	return false
}

// anyCompatible reports whether a node of this pool and instance type can
// satisfy some term: keys the node leaves open must be labels the type
// defines (or well-known ones) unless the term accepts their absence.
func anyCompatible(terms []scheduling.Requirements, reqs scheduling.Requirements, it *scheduling.InstanceType) bool {
	wellKnown := karpv1.WellKnownLabels.Clone()
	for k := range it.Requirements {
		wellKnown.Insert(k)
	}
	for _, t := range terms {
		if reqs.Compatible(t, wellKnown) == nil {
			return true
		}
	}
	return false
}

func poolRequirements(np *karpv1.NodePool) scheduling.Requirements {
	reqs := scheduling.NewLabelRequirements(np.Spec.Template.ObjectMeta.Labels)
	for _, r := range np.Spec.Template.Spec.Requirements {
		reqs.Add(scheduling.NewRequirement(r.Key, r.Operator, r.Values...))
	}
	return reqs
}

// daemonOverhead is, independently of the solver, what the DaemonSets that
// would land on a node with these labels and taints request.
func daemonOverhead(in Input, nodeLabels map[string]string, taints []corev1.Taint, bound []*corev1.Pod) (corev1.ResourceList, []scheduling.HostPort) {
	total := corev1.ResourceList{}
	var ports []scheduling.HostPort
	for _, ds := range in.DaemonSets {
		pod := daemonPod(ds, in.LimitRanges)
		tol := append(append([]corev1.Toleration(nil), pod.Spec.Tolerations...), daemonSetTolerations...)
		if scheduling.Taints(taints).ToleratesPod(tol) != nil || !matchesNode(podNodeTerms(Input{}, pod), nodeLabels) {
			continue
		}
		running := false
		for _, p := range bound {
			for _, ref := range p.OwnerReferences {
				if ref.Kind == "DaemonSet" && ref.Name == ds.Name {
					running = true
				}
			}
		}
		if running {
			continue
		}
		addList(total, scheduling.PodRequests(pod))
		ports = append(ports, scheduling.PodHostPorts(pod)...)
	}
	return total, ports
}

func addList(into, add corev1.ResourceList) {
	for n, q := range add {
		v := into[n]
		v.Add(q)
		into[n] = v
	}
}

func checkCapacity(in Input, n *checkNode) []string {
	var out []string
	used := corev1.ResourceList{}
	var ports []scheduling.HostPort
	for _, p := range n.pods {
		addList(used, scheduling.PodRequests(scheduling.WithLimitRangeDefaults(p, in.LimitRanges)))
		ports = append(ports, scheduling.PodHostPorts(p)...)
	}
	var bound []*corev1.Pod
	if n.existing != nil {
		bound = n.existing.Pods
	}
	over, dports := daemonOverhead(in, n.labels, n.taints, bound)
	if n.claim != nil {
		// Never too small: the overhead assumed covers every DaemonSet that
		// lands (it may count one whose zone is not fixed yet).
		for name, q := range over {
			if got := n.claim.DaemonOverhead[name]; got.Cmp(q) < 0 {
				out = append(out, fmt.Sprintf("daemon overhead %s = %s, below %s", name, got.String(), q.String()))
			}
		}
	}
	addList(used, over)
	for name, q := range used {
		if q.IsZero() {
			continue
		}
		a, ok := n.alloc[name]
		if !ok {
			a = resource.Quantity{}
		}
		if q.Cmp(a) > 0 {
			out = append(out, fmt.Sprintf("%s requested %s > allocatable %s", name, q.String(), a.String()))
		}
	}
	all := append(ports, dports...)
	for i := range all {
		for j := i + 1; j < len(all); j++ {
			if all[i].Conflicts(all[j]) {
				out = append(out, "host port conflict "+all[i].String())
			}
		}
	}
	return out
}

// checkClaimTypes verifies every listed instance type holds the pods plus
// its own daemon overhead and satisfies the NodeClaim's requirements, and
// that they are ordered by price.
func checkClaimTypes(in Input, nc *NodeClaim) []string {
	var out []string
	if len(nc.InstanceTypes) == 0 || nc.InstanceTypes[0] != nc.InstanceType {
		return []string{"InstanceType is not the first of InstanceTypes"}
	}
	prev := -1.0
	for _, it := range nc.InstanceTypes {
		if err := nc.Requirements.Intersects(it.Requirements); err != nil {
			out = append(out, fmt.Sprintf("type %s does not meet requirements: %v", it.Name, err))
		}
		price := it.CheapestPrice(nc.Requirements)
		if price < prev {
			out = append(out, "instance types not ordered by price")
		}
		prev = price
		lbls := map[string]string{}
		for k, v := range nc.NodePool.Spec.Template.ObjectMeta.Labels {
			lbls[k] = v
		}
		for k, v := range it.Requirements.Labels() {
			lbls[k] = v
		}
		used := corev1.ResourceList{}
		for _, p := range nc.Pods {
			addList(used, scheduling.PodRequests(scheduling.WithLimitRangeDefaults(p, in.LimitRanges)))
		}
		over, _ := daemonOverhead(in, lbls, nc.NodePool.Spec.Template.Spec.Taints, nil)
		addList(used, over)
		for name, q := range used {
			if a := it.Allocatable[name]; !q.IsZero() && q.Cmp(a) > 0 {
				out = append(out, fmt.Sprintf("type %s: %s %s > %s", it.Name, name, q.String(), a.String()))
			}
		}
	}
	return out
}

func checkLimits(in Input, res *Result, np *karpv1.NodePool) []string {
	if len(np.Spec.Limits) == 0 {
		return nil
	}
	used := corev1.ResourceList{}
	nodes := int64(0)
	for _, n := range in.Nodes {
		if n.Labels[karpv1.NodePoolLabelKey] == np.Name {
			nodes++
			c := n.Capacity
			if len(c) == 0 {
				c = n.Allocatable
			}
			addList(used, c)
		}
	}
	added := false
	for _, nc := range res.NodeClaims {
		if nc.NodePool.Name != np.Name {
			continue
		}
		added = true
		nodes++
		c := nc.InstanceType.Capacity
		if len(c) == 0 {
			c = nc.InstanceType.Allocatable
		}
		addList(used, c)
	}
	if !added {
		return nil // existing nodes may already exceed a lowered limit
	}
	var out []string
	for name, l := range np.Spec.Limits {
		if name == "nodes" {
			if nodes > l.Value() {
				out = append(out, fmt.Sprintf("%d nodes > limit %s", nodes, l.String()))
			}
			continue
		}
		if u := used[name]; u.Cmp(l) > 0 {
			out = append(out, fmt.Sprintf("%s %s > limit %s", name, u.String(), l.String()))
		}
	}
	return out
}
