package simulation

import "fmt"

// StaticNodeClaims renders count NodeClaims of a static NodePool (one with
// spec.replicas): NodeClaims with no pods, as the solver renders a new
// NodeClaim for pods, so they launch on the cheapest instance type the
// template allows that holds the DaemonSets landing on it. The template's
// requirements (instance types cheapest first and capped, capacity types,
// minValues) and the DaemonSet overhead are worked out as for any new
// NodeClaim; a capacity reservation with room is used, one instance per
// NodeClaim, as the solver uses it. Resource limits do not apply (a static
// NodePool may only limit its node count, which the caller enforces).
//
// in supplies the DaemonSets, LimitRanges, options and the nodes (whose
// NodeClaims not launched yet hold their capacity reservations); its pods
// and NodePools are ignored. When no NodeClaim can be rendered, the
// returned reason (otherwise empty) says why: no instance type satisfies the template, none holds the
// DaemonSets, or (MinValuesPolicyStrict) too few satisfy minValues.
func StaticNodeClaims(in Input, nodePool *NodePool, count int) ([]*NodeClaim, string) {
	in.Pods = nil
	in.NodePools = []*NodePool{nodePool}
	s := newSolver(&in)
	p := s.newPool(nodePool)
	p.hasLimits = false
	e := s.entryFor(p, p.reqs)
	p.root = e
	zero := s.zero()
	if len(e.order) == 0 {
		return nil, fmt.Sprintf("no instance type of NodePool %s satisfies its requirements with an available offering", p.name)
	}
	cur := -1
	for _, i := range e.order {
		if s.fitsAt(e, i, zero, zero) {
			cur = i
			break
		}
	}
	if cur < 0 {
		return nil, fmt.Sprintf("no instance type of NodePool %s holds the DaemonSets that would run on it", p.name)
	}
	relaxed := false
	if len(p.minValues) > 0 && !s.minValuesOK(e, zero, zero) {
		if in.Options.MinValuesPolicy != MinValuesPolicyBestEffort {
			return nil, fmt.Sprintf("too few instance types of NodePool %s satisfy its minValues", p.name)
		}
		relaxed = true
	}
	out := make([]*NodeClaim, 0, count)
	for range count {
		t := &target{entry: e, cur: cur, used: zero, relaxed: relaxed}
		out = append(out, s.nodeClaim(t))
	}
	return out, ""
}
