package simulation

import (
	"context"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// solver holds the state of one Solve call, by concern.
type solver struct {
	// Input and the settings derived from it.
	in               *Input
	wellKnown        sets.Set[string] // label keys the solver reasons about
	maxInstanceTypes int              // instance types listed per NodeClaim at most
	resources        *scheduling.ResourceIndex
	maxAlloc         scheduling.Vector // largest allocatable of any instance type, per resource
	daemons          []*daemon
	pools            []*pool
	// anyPreferNoSchedule is whether some pool has a PreferNoSchedule
	// taint; only then does a pod's preference ladder start by treating
	// such taints as required.
	anyPreferNoSchedule bool
	topology            *topology
	// noLimitBound turns off the limit shortcuts (limitExcludes and the
	// newClaimFit memo), so tests can compare the solve with and without
	// them.
	noLimitBound bool

	// Interning: pods, requirement sets and topology values get small ids
	// so the hot loops index slices instead of hashing.
	classes      []*class
	classByKey   map[string]*class
	classKeyBuf  strings.Builder // reused to build class keys
	variants     []*variant
	entries      []*entry          // by id
	entryByKey   map[string]*entry // by pool and requirements
	topoKeyIDs   map[string]int    // topology key -> id
	topoKeys     []string          // by id
	domainIDs    map[string]dom    // topology value -> dom
	domainValues []string          // by dom

	// Caches of checks and derived values, filled on first use.
	poolChecks       [][]poolCheck // by variant id, then pool
	typeRequirements map[[3]int]*scheduling.Requirement
	eligibleGroups   []*group               // groups with eligibility lists to extend as NodeClaims open
	newFitMemos      map[[2]int]*newFitMemo // by entry id and variant id
	zeroVector       scheduling.Vector      // an all-zero vector, never written

	// Results: where pods go, as the solve proceeds.
	targets      []*target // existing nodes, then new NodeClaims, by id
	existing     []*target
	claims       []*target
	claimsByFree []*target     // NodeClaims by free cpu, then id
	placements   []placed      // every placement, in order
	pinCounts    map[int64]int // pinKey -> NodeClaims pinned there
	// reservationUse counts the NodeClaims using each capacity
	// reservation, by reservation ID.
	reservationUse map[string]int
	// volumes are the limits and claims of existing nodes with CSI volume
	// limits; nil when no node has limits (volumelimits.go).
	volumes *volumeIndex
}

type placed struct {
	pod *podInfo
	t   *target
}

// poolCheck caches whether a variant passes a pool's taints and template
// requirements: when compatible, the entry of its NodeClaims; when not,
// why.
type poolCheck struct {
	verdict verdict
	entry   *entry
	reason  string
}

// Solve decides where pending pods go. It never returns an error for pods
// that do not fit: those are in Result.PodErrors with a Status. The context
// is only checked for cancellation between pods; pods not reached are
// reported with an Error status.
func Solve(ctx context.Context, in Input) *Result {
	return solve(ctx, in, true)
}

// solve places the pods and, with compact, then merges and empties new
// NodeClaims where that costs no more (tests compare against the result
// without it).
//
// When pods stay pending and some NodePool has limits, it solves again
// placing the least flexible pods first (those with the fewest NodePools
// to go to), and keeps that result when it leaves fewer pods pending, or
// as many at a lower price: placing by size alone lets pods that fit
// elsewhere take a limited NodePool's room from pods that fit nowhere
// else (upstream has the same weakness).
func solve(ctx context.Context, in Input, compact bool) *Result {
	res := solveOrdered(ctx, in, compact, func(_ *solver, pods []*podInfo) { sortPods(pods) })
	if len(res.PodErrors) == 0 || !anyLimits(in.NodePools) || ctx.Err() != nil {
		return res
	}
	alt := solveOrdered(ctx, in, compact, (*solver).sortLeastFlexibleFirst)
	if ctx.Err() != nil {
		return res
	}
	if len(alt.PodErrors) < len(res.PodErrors) ||
		len(alt.PodErrors) == len(res.PodErrors) && totalPrice(alt) < totalPrice(res) {
		return alt
	}
	return res
}

// solveOrdered places the pods in the order order gives them.
func solveOrdered(ctx context.Context, in Input, compact bool, order func(*solver, []*podInfo)) *Result {
	s := newSolver(&in)
	pods, rejected := splitDRA(s.pendingPods())
	order(s, pods)
	failed := s.run(ctx, pods)
	if compact {
		s.compact()
	}
	return s.finish(append(failed, rejected...))
}

// sortLeastFlexibleFirst orders pods by how many NodePools could take
// them (fewest first), then as sortPods does.
func (s *solver) sortLeastFlexibleFirst(pods []*podInfo) {
	sortPods(pods)
	pools := map[*class]int{}
	for _, p := range pods {
		if _, ok := pools[p.class]; ok {
			continue
		}
		pools[p.class] = 0
		for i := range s.pools {
			for _, v := range p.class.variants {
				if s.poolFor(v, i).verdict == compatible {
					pools[p.class]++
					break
				}
			}
		}
	}
	sort.SliceStable(pods, func(a, b int) bool { return pools[pods[a].class] < pools[pods[b].class] })
}

func anyLimits(pools []*NodePool) bool {
	for _, np := range pools {
		if len(np.NodePool.Spec.Limits) > 0 {
			return true
		}
	}
	return false
}

// totalPrice is what res's new NodeClaims cost per hour.
func totalPrice(res *Result) float64 {
	total := 0.0
	for _, nc := range res.NodeClaims {
		total += nc.Price
	}
	return total
}

// splitDRA sets aside pods that claim devices through dynamic resource
// allocation: karp does not simulate device allocation, so like upstream's
// default (--ignore-dra-requests) it reports them instead of guessing.
func splitDRA(pods []*podInfo) (keep, rejected []*podInfo) {
	for _, p := range pods {
		if len(p.pod.Spec.ResourceClaims) > 0 {
			p.status = scheduling.NewStatus(scheduling.UnschedulableAndUnresolvable,
				"pod uses dynamic resource allocation (resourceClaims), which karp does not simulate")
			rejected = append(rejected, p)
			continue
		}
		keep = append(keep, p)
	}
	return keep, rejected
}

// countHeldReservations counts, against each capacity reservation, the
// in-flight NodeClaims of earlier passes pinned to it that have not
// launched yet: the provider's count drops only at launch, so without them
// a reservation with room for one would be promised twice.
func (s *solver) countHeldReservations() {
	for _, n := range s.in.Nodes {
		if n.Launched || n.Requirements == nil {
			continue
		}
		r := n.Requirements.Get(scheduling.LabelReservationID)
		if r == nil || r.Len() != 1 {
			continue
		}
		for _, id := range r.Values() {
			s.reservationUse[id]++
		}
	}
}

func newSolver(in *Input) *solver {
	s := &solver{in: in, classByKey: map[string]*class{}, entryByKey: map[string]*entry{}, pinCounts: map[int64]int{},
		typeRequirements: map[[3]int]*scheduling.Requirement{}, reservationUse: map[string]int{}, topoKeyIDs: map[string]int{},
		domainIDs: map[string]dom{}}
	s.countHeldReservations()
	s.maxInstanceTypes = in.Options.MaxInstanceTypes
	if s.maxInstanceTypes <= 0 {
		s.maxInstanceTypes = DefaultMaxInstanceTypes
	}
	s.wellKnown = in.Options.WellKnownLabels
	if s.wellKnown == nil {
		s.wellKnown = karpv1.WellKnownLabels.Clone()
		for _, np := range in.NodePools {
			for _, it := range np.InstanceTypes {
				for k := range it.Requirements {
					s.wellKnown.Insert(k)
				}
			}
		}
	}
	s.resources = scheduling.NewResourceIndex(s.resourceNames())
	s.maxAlloc = make(scheduling.Vector, s.resources.Len())
	for _, np := range in.NodePools {
		for _, it := range np.InstanceTypes {
			for i, x := range s.resources.Vector(it.Allocatable) {
				s.maxAlloc[i] = max(s.maxAlloc[i], x)
			}
		}
	}
	for _, ds := range in.DaemonSets {
		s.daemons = append(s.daemons, s.newDaemon(ds, in.LimitRanges))
	}
	s.topology = newTopology(in.Namespaces)
	s.buildPools()
	return s
}

// resourceNames collects every resource a pod, DaemonSet, LimitRange or
// limit names, so vectors have a slot for each.
func (s *solver) resourceNames() corev1.ResourceList {
	names := corev1.ResourceList{}
	addPod := func(spec *corev1.PodSpec) {
		for _, list := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
			for i := range list {
				for n, q := range list[i].Resources.Requests {
					names[n] = q
				}
				for n, q := range list[i].Resources.Limits {
					names[n] = q
				}
			}
		}
		for n, q := range spec.Overhead {
			names[n] = q
		}
	}
	for _, p := range s.in.Pods {
		addPod(&p.Spec)
	}
	for _, n := range s.in.Nodes {
		for _, p := range n.Pods {
			addPod(&p.Spec)
		}
	}
	for _, ds := range s.in.DaemonSets {
		addPod(&ds.Spec.Template.Spec)
	}
	for _, lr := range s.in.LimitRanges {
		for _, item := range lr.Spec.Limits {
			for _, l := range []corev1.ResourceList{item.Default, item.DefaultRequest, item.Max} {
				for n, q := range l {
					names[n] = q
				}
			}
		}
	}
	for _, np := range s.in.NodePools {
		for n, q := range np.NodePool.Spec.Limits {
			if n != "nodes" {
				names[n] = q
			}
		}
	}
	return names
}

// buildPools orders NodePools by weight (highest first), ties by name
// descending as upstream does.
func (s *solver) buildPools() {
	nps := append([]*NodePool(nil), s.in.NodePools...)
	sort.SliceStable(nps, func(i, j int) bool {
		wi, wj := weight(nps[i].NodePool), weight(nps[j].NodePool)
		if wi != wj {
			return wi > wj
		}
		return nps[i].NodePool.Name > nps[j].NodePool.Name
	})
	for _, np := range nps {
		// Static NodePools (replicas) keep a fixed node count and deleting
		// NodePools launch nothing: neither takes part in scheduling.
		if np.NodePool.Spec.Replicas != nil || np.NodePool.DeletionTimestamp != nil {
			continue
		}
		p := s.newPool(np)
		p.index = len(s.pools)
		p.root = s.entryFor(p, p.reqs)
		for _, n := range s.in.Nodes {
			if n.Labels[karpv1.NodePoolLabelKey] != p.name {
				continue
			}
			c := n.Capacity
			if len(c) == 0 {
				c = n.Allocatable
			}
			p.used.Add(s.resources.Vector(c))
			p.nodesUsed++
		}
		s.pools = append(s.pools, p)
		if p.taints.HasPreferNoSchedule() {
			s.anyPreferNoSchedule = true
		}
	}
}

func weight(np *karpv1.NodePool) int32 {
	if np.Spec.Weight == nil {
		return 0
	}
	return *np.Spec.Weight
}

// pendingPods classifies the pods to place: the pending ones plus the
// reschedulable pods of nodes marked for deletion. It also registers
// existing nodes and counts their pods in topology groups.
func (s *solver) pendingPods() []*podInfo {
	var out []*podInfo
	for _, p := range s.in.Pods {
		out = append(out, &podInfo{pod: p, index: len(out)})
	}
	for _, n := range s.in.Nodes {
		if !n.MarkedForDeletion {
			continue
		}
		for _, p := range n.Pods {
			if reschedulable(p) {
				out = append(out, &podInfo{pod: p, index: len(out)})
			}
		}
	}
	for _, pi := range out {
		pi.class = s.classify(pi.pod)
	}
	s.addExisting()
	s.linkGroups()
	return out
}

// reschedulable reports whether a pod of a deleting node must be placed
// again: not terminal, not a DaemonSet or mirror pod.
func reschedulable(p *corev1.Pod) bool {
	if terminal(p) {
		return false
	}
	for _, ref := range p.OwnerReferences {
		if ref.Kind == "DaemonSet" || ref.Kind == "Node" {
			return false
		}
	}
	return true
}

// counted reports whether a bound pod counts for topology: not terminal and
// not terminating.
func counted(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && !terminal(p)
}

// terminal reports whether a pod finished; only such pods free their requests.
func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// poolFor caches the variant's pool check.
func (s *solver) poolFor(v *variant, pi int) *poolCheck {
	for len(s.poolChecks) <= v.id {
		s.poolChecks = append(s.poolChecks, nil)
	}
	if s.poolChecks[v.id] == nil {
		s.poolChecks[v.id] = make([]poolCheck, len(s.pools))
	}
	pc := &s.poolChecks[v.id][pi]
	if pc.verdict != unchecked {
		return pc
	}
	pc.verdict = incompatible
	p := s.pools[pi]
	if err := tolerated(p.taints, v.class.tolerates, v.strictPNS); err != nil {
		pc.reason = err.Error()
		return pc
	}
	if err := p.reqs.Compatible(v.reqs, s.wellKnown); err != nil {
		pc.reason = "incompatible requirements: " + err.Error()
		return pc
	}
	pc.entry = s.entryFor(p, p.reqs.Intersection(v.reqs))
	if len(pc.entry.order) == 0 {
		pc.reason = "no instance type satisfies " + v.reqs.String()
		if len(v.reqs) == 0 {
			pc.reason = "no instance type with an available offering"
		}
		pc.entry = nil
		return pc
	}
	pc.verdict = compatible
	return pc
}

// tolerated checks taints; with strictPNS PreferNoSchedule taints must be
// tolerated too (a preference treated as required).
func tolerated(taints scheduling.Taints, tol []corev1.Toleration, strictPNS bool) error {
	if err := taints.ToleratesPod(tol); err != nil {
		return err
	}
	if strictPNS {
		for i := range taints {
			if taints[i].Effect == corev1.TaintEffectPreferNoSchedule && !scheduling.Tolerates(tol, &taints[i]) {
				return errPNS(taints[i])
			}
		}
	}
	return nil
}

type errPNS corev1.Taint

func (e errPNS) Error() string {
	t := corev1.Taint(e)
	return "taint " + t.ToString() + " not tolerated (preferred)"
}
