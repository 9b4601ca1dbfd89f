package cloudprovider

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// Launch is one way to satisfy a NodeClaim: an instance type bought through
// one of its offerings.
type Launch struct {
	InstanceType *InstanceType
	Offering     *Offering
}

// Key names the launch's offering.
func (l Launch) Key() OfferingKey { return KeyOf(l.InstanceType, l.Offering) }

// NodeClaimRequirements returns the requirements of a NodeClaim's spec as a
// conjunction (deprecated label keys normalised).
func NodeClaimRequirements(nodeClaim *karpv1.NodeClaim) scheduling.Requirements {
	reqs := scheduling.Requirements{}
	for _, r := range nodeClaim.Spec.Requirements {
		reqs.Add(scheduling.NewRequirement(scheduling.NormalizeKey(r.Key), r.Operator, r.Values...))
	}
	return reqs
}

// LaunchCandidates returns every available offering of every instance type
// the NodeClaim could launch as, best first: cheapest, then (on equal price)
// reserved before on-demand before spot, then by zone and type name. An
// instance type qualifies when its requirements intersect the NodeClaim's,
// it defines every label the NodeClaim needs present, and its allocatable
// covers the NodeClaim's resource requests. skip, when not nil, drops
// offerings the caller knows are unavailable.
func LaunchCandidates(types []*InstanceType, nodeClaim *karpv1.NodeClaim, skip func(OfferingKey) bool) []Launch {
	reqs := NodeClaimRequirements(nodeClaim)
	requests := nodeClaim.Spec.Resources.Requests
	var out []Launch
	for _, it := range types {
		if !typeCompatible(it, reqs) || !Fits(requests, it.Allocatable) {
			continue
		}
		for _, o := range it.Offerings {
			if !o.Available || !o.CompatibleWith(reqs) {
				continue
			}
			if skip != nil && skip(KeyOf(it, o)) {
				continue
			}
			out = append(out, Launch{InstanceType: it, Offering: o})
		}
	}
	slices.SortStableFunc(out, compareLaunches)
	return out
}

func compareLaunches(a, b Launch) int {
	return cmp.Or(
		cmp.Compare(a.Offering.Price, b.Offering.Price),
		cmp.Compare(capacityTypeRank(a.Offering.CapacityType), capacityTypeRank(b.Offering.CapacityType)),
		cmp.Compare(a.Offering.Zone, b.Offering.Zone),
		cmp.Compare(a.InstanceType.Name, b.InstanceType.Name),
		cmp.Compare(a.Offering.ReservationID, b.Offering.ReservationID),
	)
}

// capacityTypeRank breaks price ties: reserved capacity is already paid
// for, on-demand cannot be interrupted, spot comes last.
func capacityTypeRank(capacityType string) int {
	switch capacityType {
	case karpv1.CapacityTypeReserved:
		return 0
	case karpv1.CapacityTypeOnDemand:
		return 1
	case karpv1.CapacityTypeSpot:
		return 2
	}
	return 3
}

// typeCompatible reports whether a node of type it can satisfy reqs. Keys
// the type does not define are fine when a missing label satisfies the
// requirement or the requirement lists values (the launch labels the node
// with a single listed value); Exists and numeric bounds need the label.
func typeCompatible(it *InstanceType, reqs scheduling.Requirements) bool {
	if it.Requirements.Intersects(reqs) != nil {
		return false
	}
	for key, r := range reqs {
		if _, ok := it.Requirements[key]; ok {
			continue
		}
		if !r.AcceptsAbsent() && r.IsComplement() {
			return false
		}
	}
	return true
}

// Fits reports whether allocatable covers every non-zero request.
func Fits(requests, allocatable corev1.ResourceList) bool {
	for name, q := range requests {
		if q.IsZero() {
			continue
		}
		a, ok := allocatable[name]
		if !ok || a.Cmp(q) < 0 {
			return false
		}
	}
	return true
}

// LaunchLabels returns the labels a node launched as l for nodeClaim
// carries: the NodeClaim's labels, the single value of each of its
// requirements, the instance type's labels, and the offering's zone,
// capacity type and reservation.
func LaunchLabels(nodeClaim *karpv1.NodeClaim, l Launch) map[string]string {
	labels := map[string]string{}
	for k, v := range nodeClaim.Labels {
		labels[k] = v
	}
	for k, v := range NodeClaimRequirements(nodeClaim).Labels() {
		labels[k] = v
	}
	for k, v := range l.InstanceType.Requirements.Labels() {
		labels[k] = v
	}
	labels[corev1.LabelInstanceTypeStable] = l.InstanceType.Name
	labels[corev1.LabelTopologyZone] = l.Offering.Zone
	labels[karpv1.CapacityTypeLabelKey] = l.Offering.CapacityType
	if l.Offering.ReservationID != "" {
		labels[scheduling.LabelReservationID] = l.Offering.ReservationID
	}
	return labels
}
