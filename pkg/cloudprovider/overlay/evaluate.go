package overlay

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
)

// PoolTypes is one NodePool with the instance types its provider returns
// (without overlays).
type PoolTypes struct {
	NodePool      *karpv1.NodePool
	InstanceTypes []*cloudprovider.InstanceType
}

// Evaluation is the outcome of checking the overlays against every
// NodePool's instance types.
type Evaluation struct {
	// Applied are the overlays to apply, in precedence order.
	Applied []Overlay
	// Conflicts names each overlay left out for a conflict, with the
	// message for its ValidationSucceeded condition.
	Conflicts map[string]string
}

// setter remembers which overlay last set a price or a resource, and at
// what weight.
type setter struct {
	name   string
	weight int32
}

type offeringKey struct {
	pool, instanceType, zone, capacityType, reservation string
}

type resourceKey struct {
	pool, instanceType string
	resource           corev1.ResourceName
}

// Evaluate walks the overlays in precedence order (they must be sorted
// with Order) over every NodePool's instance types. An overlay that would
// set an offering's price, or a type's resource, that an applied overlay of
// the same weight already sets conflicts and is left out entirely (no
// partial application); a higher-weight one simply takes precedence.
func Evaluate(overlays []Overlay, pools []PoolTypes) Evaluation {
	ev := Evaluation{Conflicts: map[string]string{}}
	prices := map[offeringKey]setter{}
	resources := map[resourceKey]setter{}
	for i := range overlays {
		o := &overlays[i]
		// 1. Everything the overlay would set, and whether an overlay of
		// its weight sets it already.
		var offeringsHit []offeringKey
		var resourcesHit []resourceKey
		conflict := ""
		for _, pt := range pools {
			p := newPool(pt.NodePool)
			for _, it := range pt.InstanceTypes {
				if conflict != "" || !o.selectsType(p, it) {
					continue
				}
				if o.Price != nil {
					for _, of := range it.Offerings {
						if !o.selectsOffering(of) {
							continue
						}
						key := offeringKey{pt.NodePool.Name, it.Name, of.Zone, of.CapacityType, of.ReservationID}
						if prev, ok := prices[key]; ok && prev.weight == o.Weight {
							conflict = fmt.Sprintf("conflicts with NodeOverlay %s (weight %d): both set the price of %s in %s %s of NodePool %s",
								prev.name, o.Weight, it.Name, of.Zone, of.CapacityType, pt.NodePool.Name)
							break
						}
						offeringsHit = append(offeringsHit, key)
					}
				}
				if len(o.Capacity) == 0 || conflict != "" || !o.selectsAnyOffering(it) {
					continue
				}
				for name := range o.Capacity {
					key := resourceKey{pt.NodePool.Name, it.Name, name}
					if prev, ok := resources[key]; ok && prev.weight == o.Weight {
						conflict = fmt.Sprintf("conflicts with NodeOverlay %s (weight %d): both set %s of %s in NodePool %s",
							prev.name, o.Weight, name, it.Name, pt.NodePool.Name)
						break
					}
					resourcesHit = append(resourcesHit, key)
				}
			}
		}
		if conflict != "" {
			ev.Conflicts[o.Name] = conflict
			continue
		}
		// 2. Applied: it now holds what it sets, at its weight.
		for _, key := range offeringsHit {
			prices[key] = setter{name: o.Name, weight: o.Weight}
		}
		for _, key := range resourcesHit {
			resources[key] = setter{name: o.Name, weight: o.Weight}
		}
		ev.Applied = append(ev.Applied, *o)
	}
	return ev
}
