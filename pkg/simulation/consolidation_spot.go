package simulation

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// MinSpotToSpotInstanceTypes is how many instance types cheaper than the
// candidate a single-node spot-to-spot replacement needs, and how many of
// the cheapest it launches with (upstream's 15). Spot launches pick among
// the listed types by availability as well as price, so a replacement
// pinned to the one cheapest type would be the next to be interrupted, and
// one offered every cheaper type could land on a pricier one and be
// consolidated again, walking down the price ladder. Offering exactly the
// 15 cheapest keeps the choice flexible and whatever launches is among
// them, so the next pass finds no 15 types cheaper than it.
const MinSpotToSpotInstanceTypes = 15

// Reasons the spot-to-spot rules give (upstream's wording).
const (
	spotToSpotDisabled = "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"
	spotNotCheaper     = "Can't replace with a cheaper node"
	spotTooFewTypes    = "SpotToSpotConsolidation requires %d cheaper instance type options than the current candidate to consolidate, got %d"
)

// maySpot reports whether any replacement may launch as spot.
func maySpot(ncs []*NodeClaim) bool {
	for _, nc := range ncs {
		if r := nc.Requirements.Get(scheduling.LabelCapacityType); r == nil || r.Has(scheduling.CapacityTypeSpot) {
			return true
		}
	}
	return false
}

// spotToSpot builds the replacements of spot candidates by spot capacity,
// as upstream's SpotToSpotConsolidation does: each replacement is pinned
// to spot and lists only the instance types whose spot price keeps the
// move cheaper, cheapest first. When a single candidate is replaced, each
// replacement needs at least MinSpotToSpotInstanceTypes such types and
// keeps only that many cheapest (more when minValues needs more). It
// returns the replacements and their total price, or the reason there are
// none.
func spotToSpot(ncs []*NodeClaim, price, cost float64, single bool) ([]*NodeClaim, float64, string) {
	var out []*NodeClaim
	total := 0.0
	for _, nc := range ncs {
		cp := *nc
		cp.Requirements = nc.Requirements.Copy()
		cp.Requirements[scheduling.LabelCapacityType] = scheduling.NewRequirement(scheduling.LabelCapacityType,
			corev1.NodeSelectorOpIn, scheduling.CapacityTypeSpot)
		types, prices := cheaperSpotTypes(nc.InstanceTypes, cp.Requirements, price-(cost-nc.Price))
		if len(types) == 0 {
			return nil, 0, spotNotCheaper
		}
		if single && len(types) < MinSpotToSpotInstanceTypes {
			return nil, 0, fmt.Sprintf(spotTooFewTypes, MinSpotToSpotInstanceTypes, len(types))
		}
		if single {
			keep := max(MinSpotToSpotInstanceTypes, minValuesPrefix(types, cp.Requirements))
			types = types[:min(keep, len(types))]
		}
		cp.InstanceTypes, cp.InstanceType, cp.Price = types, types[0], prices[types[0].Name].Price
		cp.Offering = prices[types[0].Name]
		names := make([]string, 0, len(types))
		for _, it := range types {
			names = append(names, it.Name)
		}
		req := scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, names...)
		if old := nc.Requirements.Get(corev1.LabelInstanceTypeStable); old != nil {
			req.MinValues = old.MinValues
		}
		cp.Requirements[corev1.LabelInstanceTypeStable] = req
		out = append(out, &cp)
		total += cp.Price
	}
	if total >= price {
		return nil, 0, spotNotCheaper
	}
	return out, total, ""
}

// cheaperSpotTypes returns the types with a spot offering compatible with
// reqs priced below budget, by that price (stable), and the offerings.
func cheaperSpotTypes(types []*scheduling.InstanceType, reqs scheduling.Requirements, budget float64) ([]*scheduling.InstanceType, map[string]*scheduling.Offering) {
	offerings := map[string]*scheduling.Offering{}
	var out []*scheduling.InstanceType
	for _, it := range types {
		o, ok := it.CheapestOffering(reqs)
		if !ok || o.CapacityType != scheduling.CapacityTypeSpot || o.Price >= budget {
			continue
		}
		offerings[it.Name] = o
		out = append(out, it)
	}
	slices.SortStableFunc(out, func(a, b *scheduling.InstanceType) int {
		switch pa, pb := offerings[a.Name].Price, offerings[b.Name].Price; {
		case pa < pb:
			return -1
		case pa > pb:
			return 1
		}
		return 0
	})
	return out, offerings
}

// minValuesPrefix is how many of the types, in order, it takes to satisfy
// every minValues of reqs (all of them when they never do).
func minValuesPrefix(types []*scheduling.InstanceType, reqs scheduling.Requirements) int {
	need := 0
	for _, key := range reqs.Keys() {
		r := reqs[key]
		if r.MinValues == nil {
			continue
		}
		seen := map[string]bool{}
		n := len(types)
		for i, it := range types {
			if tr := it.Requirements[key]; tr != nil {
				for _, v := range tr.Values() {
					if r.Has(v) {
						seen[v] = true
					}
				}
			}
			if len(seen) >= *r.MinValues {
				n = i + 1
				break
			}
		}
		need = max(need, n)
	}
	return need
}
