package scheduling

import (
	"math"

	corev1 "k8s.io/api/core/v1"
)

// Label keys instance types and offerings are described by. They equal the
// karpenter.sh/v1 well-known labels of the same meaning.
const (
	LabelCapacityType  = "karpenter.sh/capacity-type"
	LabelReservationID = "karpenter.sh/reservation-id"
	CapacityTypeSpot   = "spot"
	CapacityTypeOD     = "on-demand"
	CapacityTypeRsv    = "reserved"
)

// Offering is one way to buy an instance type: a zone and capacity type at a
// price, possibly unavailable (e.g. insufficient capacity), possibly backed
// by a capacity reservation.
type Offering struct {
	Zone         string
	CapacityType string
	Price        float64
	Available    bool
	// ReservationID names the capacity reservation of a reserved offering.
	ReservationID string
	// ReservationCapacity is how many more instances the reservation holds.
	ReservationCapacity int
}

// CompatibleWith reports whether the offering satisfies the zone, capacity
// type and reservation requirements in reqs (other keys are ignored).
func (o *Offering) CompatibleWith(reqs Requirements) bool {
	return NewOfferingFilter(reqs).Admits(o)
}

// OfferingFilter is Offering.CompatibleWith for one set of requirements,
// which it looks up once for any number of offerings.
type OfferingFilter struct {
	zone, capacityType, reservation *Requirement
}

// NewOfferingFilter returns the filter of reqs.
func NewOfferingFilter(reqs Requirements) OfferingFilter {
	if len(reqs) == 0 {
		return OfferingFilter{}
	}
	return OfferingFilter{zone: reqs[corev1.LabelTopologyZone], capacityType: reqs[LabelCapacityType], reservation: reqs[LabelReservationID]}
}

// Admits reports whether o is compatible with the filter's requirements.
func (f OfferingFilter) Admits(o *Offering) bool {
	if f.zone != nil && !f.zone.Has(o.Zone) {
		return false
	}
	if f.capacityType != nil && !f.capacityType.Has(o.CapacityType) {
		return false
	}
	if r := f.reservation; r != nil {
		if o.ReservationID == "" {
			return r.AcceptsAbsent()
		}
		return r.Has(o.ReservationID)
	}
	return true
}

// InstanceType is a node shape a cloud provider can launch.
type InstanceType struct {
	Name string
	// Requirements describes the labels a node of this type carries: every
	// instance label, the instance-type label, and the zones and capacity
	// types of its offerings.
	Requirements Requirements
	Capacity     corev1.ResourceList
	Allocatable  corev1.ResourceList
	Offerings    []*Offering
	// PriceOverlaid and CapacityOverlaid are true on a copy a NodeOverlay
	// changed (an offering's price; the capacity): NodeClaims that may
	// launch it say so in their karpenter.sh/price-overlay-applied and
	// capacity-overlay-applied annotations.
	PriceOverlaid, CapacityOverlaid bool
}

// NewInstanceType builds an instance type, deriving its requirements from
// labels and offerings.
func NewInstanceType(name string, labels map[string]string, capacity, allocatable corev1.ResourceList, offerings []*Offering) *InstanceType {
	it := &InstanceType{Name: name, Capacity: capacity, Allocatable: allocatable, Offerings: offerings}
	it.Requirements = NewLabelRequirements(labels)
	it.Requirements[corev1.LabelInstanceTypeStable] = NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, name)
	it.RefreshOfferingRequirements()
	return it
}

// RefreshOfferingRequirements recomputes the zone and capacity-type
// requirements from the offerings (call after changing availability).
func (it *InstanceType) RefreshOfferingRequirements() {
	var zones, types []string
	for _, o := range it.Offerings {
		if !o.Usable() {
			continue
		}
		zones = append(zones, o.Zone)
		types = append(types, o.CapacityType)
	}
	it.Requirements[corev1.LabelTopologyZone] = NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zones...)
	it.Requirements[LabelCapacityType] = NewRequirement(LabelCapacityType, corev1.NodeSelectorOpIn, types...)
}

// Usable reports whether the offering can be launched now: available, and
// for a capacity reservation, with capacity left.
func (o *Offering) Usable() bool {
	return o.Available && (o.ReservationID == "" || o.ReservationCapacity > 0)
}

// OfferingIn is the offering of the type in zone with capacityType
// (the first, if reservations give several), available or not.
func (it *InstanceType) OfferingIn(zone, capacityType string) (*Offering, bool) {
	for _, o := range it.Offerings {
		if o.Zone == zone && o.CapacityType == capacityType {
			return o, true
		}
	}
	return nil, false
}

// CheapestOffering returns the cheapest usable offering compatible with
// reqs. On equal price reserved wins, then on-demand over spot (spot is
// taken only when it is actually cheaper), then the zone sorts first.
func (it *InstanceType) CheapestOffering(reqs Requirements) (*Offering, bool) {
	return it.CheapestOfferingWhere(reqs, nil)
}

// CheapestOfferingWhere is CheapestOffering among the offerings keep
// accepts (nil accepts all).
func (it *InstanceType) CheapestOfferingWhere(reqs Requirements, keep func(*Offering) bool) (*Offering, bool) {
	var best *Offering
	f := NewOfferingFilter(reqs)
	for _, o := range it.Offerings {
		if !o.Usable() || !f.Admits(o) || keep != nil && !keep(o) {
			continue
		}
		if best == nil || offeringLess(o, best) {
			best = o
		}
	}
	return best, best != nil
}

// CheapestPrice is the price of CheapestOffering, +Inf when none.
func (it *InstanceType) CheapestPrice(reqs Requirements) float64 {
	if o, ok := it.CheapestOffering(reqs); ok {
		return o.Price
	}
	return math.Inf(1)
}

func offeringLess(a, b *Offering) bool {
	if a.Price != b.Price {
		return a.Price < b.Price
	}
	if a.CapacityType != b.CapacityType {
		return capacityTypeRank(a.CapacityType) < capacityTypeRank(b.CapacityType)
	}
	return a.Zone < b.Zone
}

// capacityTypeRank orders capacity types on a price tie: reserved capacity
// is already paid for, on-demand is not interruptible, spot last.
func capacityTypeRank(ct string) int {
	switch ct {
	case CapacityTypeRsv:
		return 0
	case CapacityTypeOD:
		return 1
	case CapacityTypeSpot:
		return 2
	}
	return 3
}
