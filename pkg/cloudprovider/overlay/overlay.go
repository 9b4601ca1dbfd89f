package overlay

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	karpv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/v1alpha1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// offeringKeys are the requirement keys that select offerings rather than
// instance types.
var offeringKeys = []string{corev1.LabelTopologyZone, karpv1.CapacityTypeLabelKey, scheduling.LabelReservationID}

// Overlay is a NodeOverlay decoded for matching: its requirements split
// into the instance-type part and the offering part, its price change
// parsed.
type Overlay struct {
	Name   string
	Weight int32
	// Price is the price or price adjustment; nil when the overlay sets none.
	Price *karpv1alpha1.PriceChange
	// Capacity are the extended resources it sets.
	Capacity corev1.ResourceList
	// typeReqs select instance types (and NodePools), offeringReqs the
	// offerings of a selected type.
	typeReqs, offeringReqs scheduling.Requirements
}

// New decodes a NodeOverlay that passed RuntimeValidate.
func New(no *karpv1alpha1.NodeOverlay) (Overlay, error) {
	o := Overlay{Name: no.Name, Capacity: no.Spec.Capacity}
	if no.Spec.Weight != nil {
		o.Weight = *no.Spec.Weight
	}
	for _, s := range []*string{no.Spec.Price, no.Spec.PriceAdjustment} {
		if s == nil {
			continue
		}
		change, err := karpv1alpha1.ParsePriceChange(*s)
		if err != nil {
			return Overlay{}, fmt.Errorf("nodeoverlay %s: %w", no.Name, err)
		}
		o.Price = &change
	}
	nsrs := make([]corev1.NodeSelectorRequirement, 0, len(no.Spec.Requirements))
	for _, r := range no.Spec.Requirements {
		nsrs = append(nsrs, r.AsNodeSelectorRequirement())
	}
	reqs := scheduling.NewNodeSelectorRequirements(nsrs...)
	o.typeReqs, o.offeringReqs = scheduling.NewRequirements(), scheduling.NewRequirements()
	for key, r := range reqs {
		if slices.Contains(offeringKeys, key) {
			o.offeringReqs[key] = r
		} else {
			o.typeReqs[key] = r
		}
	}
	return o, nil
}

// Order sorts overlays by precedence: highest weight first, then the name
// that sorts last first (upstream's OrderByWeight).
func Order(overlays []Overlay) {
	slices.SortStableFunc(overlays, func(a, b Overlay) int {
		return cmp.Or(cmp.Compare(b.Weight, a.Weight), cmp.Compare(b.Name, a.Name))
	})
}

// pool is what of a NodePool an overlay may select on: its name and its
// template labels.
type pool struct {
	reqs scheduling.Requirements
}

func newPool(nodePool *karpv1.NodePool) pool {
	reqs := scheduling.NewLabelRequirements(nodePool.Spec.Template.ObjectMeta.Labels)
	reqs[karpv1.NodePoolLabelKey] = scheduling.NewRequirement(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, nodePool.Name)
	return pool{reqs: reqs}
}

// selectsType reports whether the overlay applies to the instance type in
// the pool, offerings aside. A key neither defines only matches a
// requirement that accepts its absence (NotIn, DoesNotExist).
func (o *Overlay) selectsType(p pool, it *cloudprovider.InstanceType) bool {
	for key, want := range o.typeReqs {
		defined := false
		for _, have := range []*scheduling.Requirement{p.reqs[key], it.Requirements[key]} {
			if have == nil {
				continue
			}
			defined = true
			if !have.Intersects(want) {
				return false
			}
		}
		if !defined && !want.AcceptsAbsent() {
			return false
		}
	}
	return true
}

// selectsOffering reports whether the overlay applies to the offering of a
// type it selects.
func (o *Overlay) selectsOffering(of *cloudprovider.Offering) bool {
	return of.CompatibleWith(o.offeringReqs)
}

// selectsAnyOffering reports whether the overlay applies to at least one
// offering of the type: capacity applies to the whole type then (upstream's
// all-or-nothing rule).
func (o *Overlay) selectsAnyOffering(it *cloudprovider.InstanceType) bool {
	return slices.ContainsFunc(it.Offerings, o.selectsOffering)
}

// Apply returns the pool's instance types with the overlays (ordered by
// Order) applied. Types no overlay changes are returned as they are; the
// others are copies, so the provider's shared values are never mutated.
func Apply(overlays []Overlay, nodePool *karpv1.NodePool, types []*cloudprovider.InstanceType) []*cloudprovider.InstanceType {
	if len(overlays) == 0 {
		return types
	}
	p := newPool(nodePool)
	out := make([]*cloudprovider.InstanceType, len(types))
	for i, it := range types {
		out[i] = applyType(overlays, p, it)
	}
	return out
}

// applyType applies the overlays to one instance type.
func applyType(overlays []Overlay, p pool, it *cloudprovider.InstanceType) *cloudprovider.InstanceType {
	var selected []*Overlay
	for i := range overlays {
		if overlays[i].selectsType(p, it) {
			selected = append(selected, &overlays[i])
		}
	}
	if len(selected) == 0 {
		return it
	}
	var offerings []*cloudprovider.Offering
	for j, of := range it.Offerings {
		for _, o := range selected {
			if o.Price == nil || !o.selectsOffering(of) {
				continue
			}
			if offerings == nil {
				offerings = slices.Clone(it.Offerings)
			}
			changed := *of
			changed.Price = o.Price.Apply(of.Price)
			offerings[j] = &changed
			break
		}
	}
	var capacity corev1.ResourceList
	for _, o := range selected {
		if len(o.Capacity) == 0 || !o.selectsAnyOffering(it) {
			continue
		}
		for name, q := range o.Capacity {
			if _, set := capacity[name]; set {
				continue
			}
			if capacity == nil {
				capacity = corev1.ResourceList{}
			}
			capacity[name] = q
		}
	}
	if offerings == nil && capacity == nil {
		return it
	}
	copied := *it
	if offerings != nil {
		copied.Offerings = offerings
		copied.PriceOverlaid = true
	}
	if capacity != nil {
		copied.Capacity = merged(it.Capacity, capacity)
		copied.Allocatable = merged(it.Allocatable, capacity)
		copied.CapacityOverlaid = true
	}
	return &copied
}

// merged returns a copy of base with over's quantities set.
func merged(base, over corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(base)+len(over))
	for name, q := range base {
		out[name] = q
	}
	for name, q := range over {
		out[name] = q
	}
	return out
}
