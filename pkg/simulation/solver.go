package simulation

import (
	"bytes"
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// solver holds the state of one Solve call, by concern.
type solver struct {
	// Input and the settings derived from it.
	in               *Input
	wellKnown        sets.Set[string] // label keys the solver reasons about
	resourceKeyStr   string           // see resourceKey
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
	// noSwap turns off swapClaims, so tests can compare the solve with
	// and without it.
	noSwap bool

	// Interning: pods, requirement sets and topology values get small ids
	// so the hot loops index slices instead of hashing.
	classes    []*class
	classBlock []class // the classes newClass has yet to hand out
	// variantBlock and variantPtrs hold the variants, and slots for
	// pointers to them, newVariants has yet to hand out.
	variantBlock []variant
	variantPtrs  []*variant
	reqBuf       scheduling.Vector // scratch for a pod's requests (classify)
	classByKey   map[string]*class
	classKeyBuf  bytes.Buffer // reused to build class keys
	// shapes holds the first class of each shape (shapeKey), whose
	// variants later classes of the shape share; sharedVariants counts
	// the variants' shared ids.
	shapes         map[string]*class
	sharedVariants int
	variants       []*variant
	entries        []*entry          // by id
	entryByKey     map[string]*entry // by pool and Requirements.AppendKey
	keyBuf         []byte            // scratch for entryFor's and entryForIntersection's key
	topoKeyIDs     map[string]int    // topology key -> id
	topoKeys       []string          // by id
	domainIDs      map[string]dom    // topology value -> dom
	domainValues   []string          // by dom

	// Caches of checks and derived values, filled on first use.
	poolChecks       [][]poolCheck // by variant.shared, then pool
	typeRequirements map[[3]int]*scheduling.Requirement
	eligibleGroups   []*group               // groups with eligibility lists to extend as NodeClaims open
	newFitMemos      map[[2]int]*newFitMemo // by entry id and variant id
	rules            []hostRule             // by group id, for moves (move.go)
	moveInfos        []moveInfo             // by variant.shared, for moves (move.go)
	zeroVector       scheduling.Vector      // an all-zero vector, never written
	ctLists          [][]string             // distinct capacity type lists, by capacityTypes id

	// Results: where pods go, as the solve proceeds.
	targets      []*target // existing nodes, then new NodeClaims, by id
	existing     []*target
	claims       []*target
	claimsByFree []*target     // NodeClaims by free cpu, then id
	fresh        target        // the NodeClaim tryNew checks opening
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
	reason  scheduling.Reason
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
// When pods stay pending because some NodePool's limit refused them, the
// limit binds, and placing by size alone lets pods that fit elsewhere, and
// instance types that strand part of their capacity, take the limited
// NodePool's room (upstream has the same weakness). It then solves again
// with the strategies of binding.go, and keeps the result that leaves the
// fewest pods pending, then the cheapest.
func solve(ctx context.Context, in Input, compact bool) *Result {
	res, bound := solveWith(ctx, in, compact, strategy{order: bySize})
	if len(res.PodErrors) == 0 || !anyLimits(in.NodePools) || ctx.Err() != nil {
		return res
	}
	for _, st := range bindingStrategies(bound) {
		alt, _ := solveWith(ctx, in, compact, st)
		if ctx.Err() != nil {
			return res
		}
		if fewerPending(alt, res, in.Headroom) {
			res = alt
		}
	}
	return res
}

// fewerPending reports whether a leaves fewer pods pending than b, or as
// many at a lower price, or at the same price on fewer NodeClaims.
// Real pods count first: a solve that leaves a real pod pending to place
// headroom pods is never preferred.
func fewerPending(a, b *Result, headroom map[types.UID]bool) bool {
	ra, rb := realPending(a, headroom), realPending(b, headroom)
	if ra != rb {
		return ra < rb
	}
	if len(a.PodErrors) != len(b.PodErrors) {
		return len(a.PodErrors) < len(b.PodErrors)
	}
	// Prices within priceTolerance are equal: float rounding must not
	// pick the result with more NodeClaims.
	pa, pb := totalPrice(a), totalPrice(b)
	if noDearer(pa, pb) && noDearer(pb, pa) {
		return len(a.NodeClaims) < len(b.NodeClaims)
	}
	return pa < pb
}

// realPending counts the pods res leaves pending that are not headroom.
func realPending(res *Result, headroom map[types.UID]bool) int {
	n := 0
	for _, pe := range res.PodErrors {
		if !headroom[pe.Pod.UID] {
			n++
		}
	}
	return n
}

// solveOrdered places the pods in the order order gives them, without
// limit-efficient NodePools.
func solveOrdered(ctx context.Context, in Input, compact bool, order func(*solver, []*podInfo)) *Result {
	res, _ := solveWith(ctx, in, compact, strategy{order: order})
	return res
}

// solveWith solves under one strategy. It also returns the NodePools whose
// limits refused a pod at some point of the solve.
func solveWith(ctx context.Context, in Input, compact bool, st strategy) (*Result, map[string]bool) {
	s := newSolver(&in)
	s.setBinding(st.binding)
	all := s.pendingPods()
	zones := s.pendingByZone(all)
	pods, rejected := splitDRA(all)
	st.order(s, pods)
	s.queue(pods)
	failed := s.runRealFirst(ctx, pods)
	if compact {
		failed = s.compactAndRetry(ctx, failed)
	}
	res := s.finish(append(failed, rejected...))
	res.PendingByZone = zones
	return res, s.boundPools()
}

// compactAndRetry compacts the new NodeClaims, and while that releases
// room under some NodePool's limits (a NodeClaim merged, emptied or shrunk
// to a type of smaller capacity), places the pods still pending again, so
// the room a solve reserved and then gave back is used in the same solve.
// The pods left pending carry the reason their last attempt found, against
// the usage that stands.
func (s *solver) compactAndRetry(ctx context.Context, failed []*podInfo) []*podInfo {
	for round := 0; ; round++ {
		before := s.limitUsage()
		s.compact()
		if len(failed) == 0 || round >= retryRounds || ctx.Err() != nil || !s.released(before) {
			return failed
		}
		n := len(failed)
		if failed = s.runRealFirst(ctx, failed); len(failed) == n {
			return failed
		}
	}
}

// runRealFirst places the pods in order, the real ones to the end of
// their retries before any headroom pod (Input.Headroom) is tried, so a
// buffer never takes room a real pod could use. It returns the pods left
// pending, real ones first.
func (s *solver) runRealFirst(ctx context.Context, pods []*podInfo) []*podInfo {
	if len(s.in.Headroom) == 0 {
		return s.run(ctx, pods)
	}
	var real, headroom []*podInfo
	for _, p := range pods {
		if s.in.Headroom[p.pod.UID] {
			headroom = append(headroom, p)
		} else {
			real = append(real, p)
		}
	}
	failed := s.run(ctx, real)
	return append(failed, s.run(ctx, headroom)...)
}

// retryRounds bounds how often compactAndRetry places pending pods again.
const retryRounds = 4

// bySize is the usual order: largest first (sortPods).
func bySize(_ *solver, pods []*podInfo) { sortPods(pods) }

// sortLeastFlexibleFirst orders pods by how many NodePools could take
// them (fewest first), then as sortPods does.
func (s *solver) sortLeastFlexibleFirst(pods []*podInfo) {
	sortPods(pods)
	sort.SliceStable(pods, func(a, b int) bool { return s.poolsOf(pods[a].class) < s.poolsOf(pods[b].class) })
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
	keep = make([]*podInfo, 0, len(pods))
	for _, p := range pods {
		if len(p.pod.Spec.ResourceClaims) > 0 {
			p.status = scheduling.NewStatus(scheduling.UnschedulableAndUnresolvable, scheduling.Because(scheduling.ReasonNotSimulated,
				"pod uses dynamic resource allocation (resourceClaims), which karp does not simulate"))
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
	s := &solver{in: in, classByKey: map[string]*class{}, shapes: map[string]*class{}, entryByKey: map[string]*entry{}, pinCounts: map[int64]int{},
		typeRequirements: map[[3]int]*scheduling.Requirement{}, reservationUse: map[string]int{}, topoKeyIDs: map[string]int{},
		domainIDs: map[string]dom{}}
	s.countHeldReservations()
	s.maxInstanceTypes = in.Options.MaxInstanceTypes
	if s.maxInstanceTypes <= 0 {
		s.maxInstanceTypes = DefaultMaxInstanceTypes
	}
	s.wellKnown = in.Options.WellKnownLabels
	if s.wellKnown == nil {
		s.wellKnown = WellKnownLabelsOf(in.NodePools)
	}
	s.resources = scheduling.NewResourceIndex(s.resourceNames())
	s.maxAlloc = make(scheduling.Vector, s.resources.Len())
	alloc := make(scheduling.Vector, s.resources.Len())
	for _, np := range in.NodePools {
		for _, it := range np.InstanceTypes {
			for i, x := range s.resources.Fill(alloc, it.Allocatable) {
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

// WellKnownLabelsOf is what Options.WellKnownLabels means when nil:
// karpv1.WellKnownLabels plus every label key an instance type of the
// NodePools has. A caller solving many times over the same NodePools (a
// disruption pass's what-ifs) computes it once and passes it in Options:
// over a large catalog it is a quarter of a solver's set-up.
func WellKnownLabelsOf(nodePools []*NodePool) sets.Set[string] {
	out := karpv1.WellKnownLabels.Clone()
	for _, np := range nodePools {
		for _, it := range np.InstanceTypes {
			for k := range it.Requirements {
				out.Insert(k)
			}
		}
	}
	return out
}

// resourceNames collects every resource a pod, DaemonSet, LimitRange or
// limit names, so vectors have a slot for each.
func (s *solver) resourceNames() corev1.ResourceList {
	names := corev1.ResourceList{}
	for _, p := range s.in.Pods {
		addSpecResourceNames(names, &p.Spec)
	}
	for _, n := range s.in.Nodes {
		for _, p := range n.Pods {
			if s.in.NodeCache == nil {
				addSpecResourceNames(names, &p.Spec)
				continue
			}
			for _, name := range s.in.NodeCache.facts(p, s.in.LimitRanges).names {
				names[name] = resource.Quantity{}
			}
		}
	}
	for _, ds := range s.in.DaemonSets {
		addSpecResourceNames(names, &ds.Spec.Template.Spec)
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
		if !LaunchesNodes(np.NodePool) {
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

// LaunchesNodes reports whether the solver launches nodes for the
// NodePool: static NodePools (replicas) keep a fixed node count and
// deleting NodePools launch nothing, so neither takes part in scheduling.
// The controllers also require the NodePool to be Ready
// (solverinput.Launchable).
func LaunchesNodes(np *karpv1.NodePool) bool {
	return np.Spec.Replicas == nil && np.DeletionTimestamp == nil
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
	infos := make([]podInfo, len(s.in.Pods)) // one allocation for all
	out := make([]*podInfo, len(s.in.Pods))
	for i, p := range s.in.Pods {
		infos[i] = podInfo{pod: p, index: i}
		out[i] = &infos[i]
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
	for len(s.poolChecks) <= v.shared {
		s.poolChecks = append(s.poolChecks, nil)
	}
	if s.poolChecks[v.shared] == nil {
		s.poolChecks[v.shared] = make([]poolCheck, len(s.pools))
	}
	pc := &s.poolChecks[v.shared][pi]
	if pc.verdict != unchecked {
		return pc
	}
	pc.verdict = incompatible
	p := s.pools[pi]
	if err := tolerated(p.taints, v.class.tolerates, v.strictPNS); err != nil {
		pc.reason = scheduling.PoolReason(p.name, scheduling.ReasonTaintNotTolerated, err.Error())
		return pc
	}
	if err := p.reqs.Compatible(v.reqs, s.wellKnown); err != nil {
		pc.reason = scheduling.PoolReason(p.name, scheduling.ReasonIncompatibleRequirements, "incompatible requirements: "+err.Error())
		return pc
	}
	pc.entry = s.entryForIntersection(p, p.reqs, v.reqs)
	if len(pc.entry.order) == 0 {
		msg := "no instance type satisfies " + v.reqs.String()
		if len(v.reqs) == 0 {
			msg = "no instance type with an available offering"
		}
		pc.reason = scheduling.PoolReason(p.name, scheduling.ReasonNoInstanceTypeOffered, msg)
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
