package zonalshift

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// Event reasons, as upstream's, on a NodePool.
const (
	// ReasonZonalShiftActive (Warning): a zone the NodePool can provision
	// into is shifted away from; its offerings are unavailable.
	ReasonZonalShiftActive = "ZonalShiftActive"
	// ReasonZonalShiftCleared (Normal): that zone's shift ended; its
	// offerings are available again.
	ReasonZonalShiftCleared = "ZonalShiftCleared"
)

// event is one event to publish on a NodePool.
type event struct {
	nodePool *karpv1.NodePool
	kind     string // corev1.EventTypeWarning or Normal
	reason   string
	message  string
}

// poolZones is a NodePool with the zones of its EC2NodeClass's subnets.
type poolZones struct {
	nodePool *karpv1.NodePool
	zones    []awsv1.ZoneInfo
}

// transitionEvents are the events for the shifts that began (in current,
// not previous) and ended (the reverse), on each NodePool that can
// provision into the zone: its class has a subnet there and its
// requirements allow the zone by name and by zone ID.
func transitionEvents(previous, current sets.Set[string], pools []poolZones) []event {
	began, ended := sets.List(current.Difference(previous)), sets.List(previous.Difference(current))
	var out []event
	for _, pool := range pools {
		requirements := nodePoolRequirements(pool.nodePool)
		for _, zoneID := range began {
			if zone, ok := affected(requirements, pool.zones, zoneID); ok {
				out = append(out, event{pool.nodePool, corev1.EventTypeWarning, ReasonZonalShiftActive,
					fmt.Sprintf("Zonal shift detected: offerings in zone %s (%s) are unavailable for this NodePool", zone, zoneID)})
			}
		}
		for _, zoneID := range ended {
			if zone, ok := affected(requirements, pool.zones, zoneID); ok {
				out = append(out, event{pool.nodePool, corev1.EventTypeNormal, ReasonZonalShiftCleared,
					fmt.Sprintf("Zonal shift cleared: offerings in zone %s (%s) are restored for this NodePool", zone, zoneID)})
			}
		}
	}
	return out
}

// affected returns the name of the shifted zone and whether a NodePool
// with these requirements and class zones can provision into it. Shifts
// name zone IDs, requirements usually zone names: the class's subnets
// map one to the other.
func affected(requirements scheduling.Requirements, zones []awsv1.ZoneInfo, zoneID string) (string, bool) {
	i := slices.IndexFunc(zones, func(z awsv1.ZoneInfo) bool { return z.ZoneID == zoneID })
	if i < 0 {
		return "", false
	}
	zone := zones[i].Zone
	if r := requirements.Get(corev1.LabelTopologyZone); r != nil && !r.Has(zone) {
		return "", false
	}
	if r := requirements.Get(awsv1.LabelTopologyZoneID); r != nil && !r.Has(zoneID) {
		return "", false
	}
	return zone, true
}

// nodePoolRequirements are the NodePool template's requirements.
func nodePoolRequirements(nodePool *karpv1.NodePool) scheduling.Requirements {
	nsrs := make([]corev1.NodeSelectorRequirement, 0, len(nodePool.Spec.Template.Spec.Requirements))
	for _, r := range nodePool.Spec.Template.Spec.Requirements {
		nsrs = append(nsrs, corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values})
	}
	return scheduling.NewNodeSelectorRequirements(nsrs...)
}
