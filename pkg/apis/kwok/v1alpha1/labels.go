package v1alpha1

import (
	"k8s.io/apimachinery/pkg/util/sets"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// Instance labels the kwok provider puts on its instance types and nodes
// (the values follow AWS-style names: size "2xlarge", family "m5", cpu
// "8", memory "32Gi").
const (
	InstanceSizeLabelKey   = Group + "/instance-size"
	InstanceFamilyLabelKey = Group + "/instance-family"
	InstanceCPULabelKey    = Group + "/instance-cpu"
	InstanceMemoryLabelKey = Group + "/instance-memory"

	// NodeClassLabelKey names the KWOKNodeClass on NodeClaims and Nodes
	// (<group>/<lower-case kind>).
	NodeClassLabelKey = Group + "/kwoknodeclass"

	// KWOKNodeLabelKey and KWOKNodeLabelValue mark Nodes the kwok controller
	// fakes a kubelet for.
	KWOKNodeLabelKey   = "kwok.x-k8s.io/node"
	KWOKNodeLabelValue = "fake"
	// KWOKNodeAnnotationKey and KWOKNodeAnnotationValue mark a Node as one
	// kwok simulates: the kwok provider sets the annotation on the Nodes it
	// creates, and the local cluster runs kwok with
	// --manage-nodes-with-annotation-selector set to this pair, so it
	// leaves every other Node alone.
	KWOKNodeAnnotationKey   = "kwok.x-k8s.io/node"
	KWOKNodeAnnotationValue = "fake"
	// KWOKPartitionLabelKey selects which kwok controller manages a Node.
	KWOKPartitionLabelKey = "kwok-partition"
)

// Kind is the kind NodePools name in nodeClassRef.kind.
const Kind = "KWOKNodeClass"

// WellKnownLabels are the kwok instance labels every kwok instance type
// defines; pass them to karpv1.IsRestrictedLabel together with the core set.
var WellKnownLabels = sets.New(
	InstanceSizeLabelKey,
	InstanceFamilyLabelKey,
	InstanceCPULabelKey,
	InstanceMemoryLabelKey,
)

// RestrictedLabelDomain is the label domain only the kwok provider may set.
const RestrictedLabelDomain = Group

// NodeClassReference returns a nodeClassRef pointing at the named KWOKNodeClass.
func NodeClassReference(name string) *karpv1.NodeClassReference {
	return &karpv1.NodeClassReference{Group: Group, Kind: Kind, Name: name}
}
