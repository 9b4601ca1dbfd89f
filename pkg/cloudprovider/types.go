package cloudprovider

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// InstanceType is a node shape a provider can launch. It is the scheduling
// package's type so that the solver and the providers share one value.
type InstanceType = scheduling.InstanceType

// Offering is one zone and capacity type an instance type is sold in.
type Offering = scheduling.Offering

// DriftReason says why a launched NodeClaim no longer matches its NodeClass;
// empty means not drifted. It becomes the reason of the NodeClaim's Drifted
// condition.
type DriftReason string

// NodeClassDrift is the drift reason of a NodeClaim launched from an older
// version of its NodeClass (its recorded NodeClass hash differs).
const NodeClassDrift DriftReason = "NodeClassDrift"

// RepairPolicy tells the node repair controller when a Node is beyond
// saving: once its condition ConditionType has had ConditionStatus for
// TolerationDuration, the node is replaced.
type RepairPolicy struct {
	ConditionType      corev1.NodeConditionType
	ConditionStatus    corev1.ConditionStatus
	TolerationDuration time.Duration
}

// OfferingKey names one offering of one instance type. Providers use it to
// remember unavailable capacity and errors use it to say what was refused.
type OfferingKey struct {
	InstanceType string
	Zone         string
	CapacityType string
}

// String renders the key as "type/zone/capacity-type".
func (k OfferingKey) String() string {
	return fmt.Sprintf("%s/%s/%s", k.InstanceType, k.Zone, k.CapacityType)
}

// KeyOf returns the key of an offering of it.
func KeyOf(it *InstanceType, o *Offering) OfferingKey {
	return OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}
}
