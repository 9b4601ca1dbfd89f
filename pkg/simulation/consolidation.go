package simulation

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// ConsolidationDecision is what a consolidation what-if concluded.
type ConsolidationDecision string

const (
	// ConsolidationNone: the candidates must stay (a pod has nowhere to go,
	// or no replacement is cheaper).
	ConsolidationNone ConsolidationDecision = "none"
	// ConsolidationDelete: every reschedulable pod fits on the remaining
	// nodes; the candidates can simply go.
	ConsolidationDelete ConsolidationDecision = "delete"
	// ConsolidationReplace: the pods fit on the remaining nodes plus the
	// Replacements, which cost strictly less than the candidates.
	ConsolidationReplace ConsolidationDecision = "replace"
)

// ConsolidationCandidate is a node the what-if removes.
type ConsolidationCandidate struct {
	// Name is the Node's name as it appears in Input.Nodes.
	Name string
	// Price is what the node costs per hour.
	Price float64
	// CapacityType is the node's karpenter.sh/capacity-type.
	CapacityType string
}

// ConsolidationOptions tune a what-if.
type ConsolidationOptions struct {
	// RequireCheaper demands that replacements cost strictly less than the
	// candidates (consolidation); drift replaces at any price.
	RequireCheaper bool
	// SpotToSpot allows replacing spot candidates with spot capacity
	// (upstream's SpotToSpotConsolidation gate, off by default). With
	// RequireCheaper, such a move also follows upstream's flexibility
	// rules (see MinSpotToSpotInstanceTypes).
	SpotToSpot bool
}

// Consolidation is the what-if's answer.
type Consolidation struct {
	Decision ConsolidationDecision
	// Replacements are the NodeClaims to launch before the candidates go.
	// Their instance types are narrowed to those that keep the move
	// cheaper, and their capacity type is pinned to the priced offering.
	Replacements []*NodeClaim
	// Savings is the candidates' price minus the replacements' ($/hour).
	Savings float64
	// Reason explains ConsolidationNone.
	Reason string
	// SpotToSpot is set when Reason comes from the spot-to-spot rules: the
	// gate is off, or too few cheaper spot instance types remain.
	SpotToSpot bool
	// Result is the underlying solve.
	Result *Result
}

// Consolidate answers "if the candidates went, where would their pods
// go?": every reschedulable pod of the candidates must fit on the other
// initialized nodes plus new NodeClaims, never on a node still Settling
// (inside its consolidateAfter window, as upstream). in.Nodes must hold
// the candidates.
// in.Pods are the pending pods: they, and the pods of other nodes already
// marked for deletion, are placed first (reserveForWaitingPods), so a
// consolidation never takes room they need; whether they fit at all is
// the provisioner's business, not the candidates'.
//
// Unlike upstream, which rejects any move that needs more than one new
// node, a replacement by two or more smaller nodes is accepted when it is
// strictly cheaper (upstream issue 1442).
func Consolidate(ctx context.Context, in Input, candidates []ConsolidationCandidate, opts ConsolidationOptions) *Consolidation {
	return NewPass(in).Consolidate(ctx, candidates, opts)
}

// Pass is the consolidation what-ifs of one disruption pass over one input.
// Where the input's waiting pods go (reserveForWaitingPods) is the same for
// every candidate set, so a Pass solves it once, on the first what-if that
// needs it, instead of once per what-if: with pods pending during a
// scale-out that solve was as costly as the what-ifs themselves. A Pass is
// safe for concurrent use; its input must not change while it is in use.
type Pass struct {
	in Input
	mu sync.Mutex
	// placed is where the waiting pods go, by existing node; nil until
	// solved.
	placed map[*Node][]*corev1.Pod
}

// NewPass returns the what-ifs over in.
func NewPass(in Input) *Pass { return &Pass{in: in} }

// waitingPlacement is where the input's waiting pods go on existing nodes,
// solved on first use. A solve cut short by ctx is not kept.
func (p *Pass) waitingPlacement(ctx context.Context) map[*Node][]*corev1.Pod {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.placed != nil {
		return p.placed
	}
	placed := map[*Node][]*corev1.Pod{}
	for _, ep := range Solve(ctx, p.in).ExistingNodes {
		placed[ep.Node] = append(placed[ep.Node], ep.Pods...)
	}
	if ctx.Err() == nil {
		p.placed = placed
	}
	return placed
}

// Consolidate is the package's Consolidate over the Pass's input.
func (p *Pass) Consolidate(ctx context.Context, candidates []ConsolidationCandidate, opts ConsolidationOptions) *Consolidation {
	in := p.in
	names := make(map[string]bool, len(candidates))
	price, allSpot := 0.0, len(candidates) > 0
	for _, c := range candidates {
		names[c.Name] = true
		price += c.Price
		allSpot = allSpot && c.CapacityType == karpv1.CapacityTypeSpot
	}
	in = reserveForWaitingPods(ctx, in, names, p.waitingPlacement)
	in.Nodes = withCandidatesMarked(in.Nodes, names)
	in.settlingClosed = true
	res := Solve(ctx, in)
	out := &Consolidation{Decision: ConsolidationNone, Result: res}
	if len(res.PodErrors) > 0 {
		pe := res.PodErrors[0]
		out.Reason = fmt.Sprintf("pod %s/%s has nowhere else to go: %s", pe.Pod.Namespace, pe.Pod.Name, pe.Status.Message())
		return out
	}
	for _, ep := range res.ExistingNodes {
		if !ep.Node.Initialized {
			out.Reason = fmt.Sprintf("pods would move to node %s, which is still initializing", ep.Node.Name)
			return out
		}
	}
	if len(res.NodeClaims) == 0 {
		out.Decision, out.Savings = ConsolidationDelete, price
		return out
	}
	spotToSpotMove := allSpot && maySpot(res.NodeClaims)
	if spotToSpotMove && !opts.SpotToSpot {
		out.Reason, out.SpotToSpot = spotToSpotDisabled, true
		return out
	}
	cost := res.Cost()
	if opts.RequireCheaper && cost >= price {
		out.Reason = fmt.Sprintf("no cheaper placement: replacements cost $%.4f/h, the nodes cost $%.4f/h", cost, price)
		return out
	}
	if spotToSpotMove && opts.RequireCheaper {
		repl, total, why := spotToSpot(res.NodeClaims, price, cost, len(candidates) == 1)
		if why != "" {
			out.Reason, out.SpotToSpot = why, true
			return out
		}
		out.Decision, out.Replacements, out.Savings = ConsolidationReplace, repl, price-total
		return out
	}
	// Each replacement is priced at the dearest offering the provider may
	// launch it with (any listed type, any zone its requirements allow),
	// not at the cheapest: the move must save money whichever it picks.
	var replacements []*NodeClaim
	worst := 0.0
	for _, nc := range res.NodeClaims {
		budget := price - (cost - nc.Price)
		r := narrowed(nc, budget, opts.RequireCheaper)
		if r == nil {
			out.Reason = fmt.Sprintf("no cheaper placement: every instance type that fits may launch at $%.4f/h or more, the nodes cost $%.4f/h",
				budget, price)
			return out
		}
		replacements = append(replacements, r)
		worst += worstLaunchPrice(r.InstanceTypes, r.Requirements)
	}
	if opts.RequireCheaper && worst >= price {
		out.Reason = fmt.Sprintf("no cheaper placement: replacements may cost $%.4f/h, the nodes cost $%.4f/h", worst, price)
		return out
	}
	out.Decision, out.Replacements, out.Savings = ConsolidationReplace, replacements, price-worst
	return out
}

// WorstLaunchPrice is what the NodeClaim may cost per hour: the dearest
// usable offering of any type it lists, in any zone and capacity type its
// requirements allow. Consolidation savings are priced with it.
func WorstLaunchPrice(nc *NodeClaim) float64 {
	return worstLaunchPrice(nc.InstanceTypes, nc.Requirements)
}

// worstLaunchPrice is the price of the dearest usable offering compatible
// with reqs of any of types: what a NodeClaim listing them may cost.
func worstLaunchPrice(types []*scheduling.InstanceType, reqs scheduling.Requirements) float64 {
	worst := 0.0
	for _, it := range types {
		if p, ok := typeWorstPrice(it, reqs); ok {
			worst = max(worst, p)
		}
	}
	return worst
}

// typeWorstPrice is the dearest usable offering of it compatible with
// reqs; false when it has none.
func typeWorstPrice(it *scheduling.InstanceType, reqs scheduling.Requirements) (float64, bool) {
	worst, found := 0.0, false
	for _, o := range it.Offerings {
		if o.Usable() && o.CompatibleWith(reqs) {
			worst, found = max(worst, o.Price), true
		}
	}
	return worst, found
}

// reserveForWaitingPods places the pods waiting for room (in.Pods and the
// pods of nodes marked for deletion that are not candidates) with the
// candidates still in place, and returns the input with each pod placed on
// an existing node added to that node, so they hold its room; the marked
// nodes and the pending pods are then left out. Pods that would need new
// NodeClaims, or fit nowhere, hold no existing room and are dropped: the
// provisioner places them. A pod placed on a candidate becomes one of its
// pods and must find room elsewhere for the candidate to go; it stays a
// waiting pod, which Settling nodes still take.
func reserveForWaitingPods(ctx context.Context, in Input, candidates map[string]bool, placement func(context.Context) map[*Node][]*corev1.Pod) Input {
	waiting := len(in.Pods) > 0
	for _, n := range in.Nodes {
		waiting = waiting || (n.MarkedForDeletion && !candidates[n.Name])
	}
	out := in
	out.Pods = nil
	if !waiting {
		return out
	}
	placed := placement(ctx)
	out.Nodes = make([]*Node, 0, len(in.Nodes))
	for _, n := range in.Nodes {
		if n.MarkedForDeletion && !candidates[n.Name] {
			continue
		}
		if pods := placed[n]; len(pods) > 0 {
			cp := *n
			cp.Pods = append(slices.Clone(n.Pods), pods...)
			n = &cp
			if candidates[n.Name] {
				if out.waiting == nil {
					out.waiting = map[*corev1.Pod]bool{}
				}
				for _, p := range pods {
					out.waiting[p] = true
				}
			}
		}
		out.Nodes = append(out.Nodes, n)
	}
	return out
}

// withCandidatesMarked copies the node list: candidates are marked for
// deletion, other nodes already marked are dropped.
func withCandidatesMarked(nodes []*Node, names map[string]bool) []*Node {
	out := make([]*Node, 0, len(nodes))
	for _, n := range nodes {
		switch {
		case names[n.Name]:
			cp := *n
			cp.MarkedForDeletion = true
			out = append(out, &cp)
		case n.MarkedForDeletion:
		default:
			out = append(out, n)
		}
	}
	return out
}

// narrowed returns a copy of the NodeClaim pinned to its offering's
// capacity type and, when cheaper is required, listing only the instance
// types whose dearest offering on that capacity type (in any zone the
// requirements allow) stays below budget, by more than priceTolerance:
// whichever of them the provider launches, the move stays cheaper. It
// returns nil when cheaper is required and no type (or, with minValues, not
// enough types) stays below budget.
func narrowed(nc *NodeClaim, budget float64, cheaper bool) *NodeClaim {
	cp := *nc
	if nc.Offering == nil {
		return &cp
	}
	cp.Requirements = nc.Requirements.Copy()
	ct := scheduling.NewRequirement(scheduling.LabelCapacityType, corev1.NodeSelectorOpIn, nc.Offering.CapacityType)
	cp.Requirements[scheduling.LabelCapacityType] = ct
	if !cheaper {
		return &cp
	}
	reqs := cp.Requirements
	cp.InstanceTypes = slices.DeleteFunc(slices.Clone(nc.InstanceTypes), func(it *scheduling.InstanceType) bool {
		p, ok := typeWorstPrice(it, reqs)
		// A type priced at the budget (within priceTolerance: the
		// budget is a difference of sums, 0.612-(0.459-0.153) is
		// 0.30600000000000005) leaves the move no cheaper.
		return !ok || noDearer(budget, p)
	})
	if len(cp.InstanceTypes) == 0 {
		return nil
	}
	old := nc.Requirements.Get(corev1.LabelInstanceTypeStable)
	if old != nil && old.MinValues != nil && len(cp.InstanceTypes) < *old.MinValues {
		// Narrowing would break minValues, and keeping the solver's list
		// could make the move dearer: no replacement.
		return nil
	}
	names := make([]string, 0, len(cp.InstanceTypes))
	for _, it := range cp.InstanceTypes {
		names = append(names, it.Name)
	}
	it := scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, names...)
	if old != nil {
		it.MinValues = old.MinValues
	}
	cp.Requirements[corev1.LabelInstanceTypeStable] = it
	return &cp
}

// BalancedApproves is upstream's Balanced policy test with k = 2: a move is
// worth it when its share of the pool's cost saved is at least half its
// share of the pool's disruption, i.e. score = (savings/poolCost) /
// (disruption/poolDisruption) >= 1/2. Moves that save nothing never pass;
// moves that disrupt nothing always do.
func BalancedApproves(savings, poolCost, disruption, poolDisruption float64) (float64, bool) {
	if savings <= 0 || poolCost <= 0 {
		return 0, false
	}
	if disruption <= 0 || poolDisruption <= 0 {
		return 1, true
	}
	score := (savings / poolCost) / (disruption / poolDisruption)
	return score, score >= 0.5
}
