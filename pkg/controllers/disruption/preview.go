package disruption

import (
	"context"
	"fmt"
	"slices"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// Preview is what a disruption pass would decide now, computed by the
// pass's own code (buildWorld, the methods, whyNot) without acting: no
// command starts, no condition, taint or event is written. `karp explain`
// and `karp simulate --disruption` run it on a read-only view of a
// cluster.
type Preview struct {
	// Commands are the decisions of the methods, in the order the
	// controller tries them; the first is what it would start next. A
	// method that would do nothing is left out.
	Commands []Command
	// Blocked says, by node name, why each managed node no command takes
	// stays: the DisruptionBlocked condition's reason and message.
	Blocked map[string]Blocker
	// Candidates are the nodes nothing holds: each method may take them
	// when its own rules allow.
	Candidates []*Candidate
	// Budgets are the disruptions each NodePool allows now, by reason.
	Budgets map[karpv1.DisruptionReason]Budgets
	// Nodes are every node of the view (managed or not), in name order.
	Nodes []*state.StateNode

	sim *passSimulator
	w   *world
}

// Blocker is why a node is not being disrupted: Reason is one of the
// Blocked* codes (the DisruptionBlocked condition's reason).
type Blocker struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Preview runs one pass's decisions over the controller's cluster state
// and returns them; it writes nothing. Memoized searches are ignored, so
// every method searches.
func (c *Controller) Preview(ctx context.Context) (*Preview, error) {
	w := c.buildWorld(ctx, nil)
	if err := c.simulator.refresh(ctx, c, w); err != nil {
		return nil, err
	}
	p := &Preview{Blocked: map[string]Blocker{}, Candidates: w.candidates,
		Budgets: map[karpv1.DisruptionReason]Budgets{}, Nodes: w.stateNodes, sim: c.simulator, w: w}
	// A later method does not consider the nodes an earlier command takes
	// (as the next pass would not: they are queued by then).
	taken := map[*Candidate]bool{}
	for _, m := range c.methods {
		cands := slices.DeleteFunc(w.filter(ctx, m), func(c *Candidate) bool { return taken[c] })
		if len(cands) == 0 {
			continue
		}
		var budgets Budgets
		if nb, ok := m.(interface{ IgnoresBudgets() bool }); !ok || !nb.IgnoresBudgets() {
			if _, ok := p.Budgets[m.Reason()]; !ok {
				b, err := budgetsFor(w, m.Reason())
				if err != nil {
					return nil, err
				}
				p.Budgets[m.Reason()] = b
			}
			budgets = p.Budgets[m.Reason()]
		}
		cmd, err := m.ComputeCommand(ctx, w, c.simulator, budgets, cands...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Name(), err)
		}
		if !cmd.Empty() {
			p.Commands = append(p.Commands, cmd)
			for _, c := range cmd.Candidates {
				taken[c] = true
			}
		}
	}
	for _, reason := range []karpv1.DisruptionReason{karpv1.DisruptionReasonEmpty, karpv1.DisruptionReasonDrifted, karpv1.DisruptionReasonUnderutilized} {
		if _, ok := p.Budgets[reason]; !ok {
			b, err := budgetsFor(w, reason)
			if err != nil {
				return nil, err
			}
			p.Budgets[reason] = b
		}
	}
	refreshEligibility(ctx, w)
	for name, b := range w.blocked {
		p.Blocked[name] = Blocker{Reason: b.reason, Message: b.message}
	}
	return p, nil
}

// Moves answers "if these nodes went now, where would their pods go?"
// over the preview's input: the solve with the nodes removed, replacements
// at any price. Nodes need not be candidates.
func (p *Preview) Moves(ctx context.Context, nodes ...string) (*simulation.Consolidation, error) {
	var cands []*Candidate
	for _, name := range nodes {
		found := false
		for _, sn := range p.w.stateNodes {
			if sn.Name() == name {
				cands = append(cands, &Candidate{StateNode: sn})
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("node %q is not in the cluster", name)
		}
	}
	return p.sim.Simulate(ctx, simulation.ConsolidationOptions{}, cands...)
}

// NodePool returns the NodePool the preview read by name, or nil.
func (p *Preview) NodePool(name string) *karpv1.NodePool { return p.w.nodePools[name] }
