package simulation

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// PreferencePolicy says what to do with soft constraints.
type PreferencePolicy string

const (
	// PreferencePolicyRespect treats preferences (preferred node and pod
	// affinity, ScheduleAnyway spread, PreferNoSchedule taints) as required
	// first and relaxes them one at a time when a pod does not fit.
	PreferencePolicyRespect PreferencePolicy = "Respect"
	// PreferencePolicyIgnore drops every preference up front.
	PreferencePolicyIgnore PreferencePolicy = "Ignore"
)

// MinValuesPolicy says what to do when a NodeClaim cannot satisfy minValues.
type MinValuesPolicy string

const (
	// MinValuesPolicyStrict refuses NodeClaims whose instance types span
	// fewer distinct values than minValues.
	MinValuesPolicyStrict MinValuesPolicy = "Strict"
	// MinValuesPolicyBestEffort launches them anyway and marks the NodeClaim
	// MinValuesRelaxed.
	MinValuesPolicyBestEffort MinValuesPolicy = "BestEffort"
)

// DefaultMaxInstanceTypes is how many instance types a NodeClaim carries
// at most, cheapest first (the cloud provider picks among them).
const DefaultMaxInstanceTypes = 60

// Options tune the solver.
type Options struct {
	PreferencePolicy PreferencePolicy
	MinValuesPolicy  MinValuesPolicy
	// MaxInstanceTypes caps NodeClaim.InstanceTypes; 0 means 60.
	MaxInstanceTypes int
	// WellKnownLabels may be left undefined by a NodePool and still match
	// pods. nil means karpv1.WellKnownLabels plus every label key any
	// instance type defines.
	WellKnownLabels sets.Set[string]
}

// NodePool is a NodePool with the instance types its NodeClass offers.
type NodePool struct {
	NodePool      *karpv1.NodePool
	InstanceTypes []*scheduling.InstanceType
}

// Node is capacity that exists or is being launched.
type Node struct {
	Name string
	// Labels are the node's labels (for an in-flight NodeClaim, its labels).
	Labels map[string]string
	// Requirements, for an in-flight NodeClaim, narrow what its node will be;
	// nil for registered nodes.
	Requirements  scheduling.Requirements
	Taints        []corev1.Taint
	StartupTaints []corev1.Taint
	Capacity      corev1.ResourceList
	Allocatable   corev1.ResourceList
	// Pods are the pods bound (or nominated) to the node.
	Pods []*corev1.Pod
	// Initialized is false while the node starts; its startup and known
	// ephemeral taints are then ignored.
	Initialized bool
	// MarkedForDeletion nodes lend no capacity; their reschedulable pods are
	// placed again with the pending ones.
	MarkedForDeletion bool
	// Launched is true once the node's instance exists (always for a
	// registered node). An in-flight NodeClaim not launched yet and pinned
	// to a capacity reservation holds one of its places: the provider's
	// count of what the reservation holds only drops at launch.
	Launched bool
	// Settling is true while the node is inside its NodePool's
	// consolidateAfter window: consolidation moves no pod of its
	// candidates onto it (upstream's rule), though pending pods and the
	// pods of nodes being deleted may still use its room.
	Settling bool
	// VolumeLimits are how many volumes of each CSI driver the node can
	// attach, from its CSINode; nil when it reports none (an in-flight
	// NodeClaim has no CSINode yet). A pod whose claims would take the node
	// over a driver's limit does not go there.
	VolumeLimits scheduling.VolumeLimits
}

// Input is everything Solve needs, gathered by the caller.
type Input struct {
	Pods        []*corev1.Pod
	Nodes       []*Node
	DaemonSets  []*appsv1.DaemonSet
	LimitRanges []corev1.LimitRange
	// ClusterLimits cap every NodePool's nodes together (--cluster-limits;
	// resource names and "nodes"). They are applied when NodeClaims are
	// admitted (AdmitLimits, the provisioner), not by the solve.
	ClusterLimits corev1.ResourceList
	// Namespaces resolve pod affinity namespaceSelectors (optional).
	Namespaces []*corev1.Namespace
	NodePools  []*NodePool
	// PodVolumes are the claims each pod attaches, by CSI driver and pod
	// UID, resolved by the caller when some node has VolumeLimits: for the
	// pods to place and the pods of every node (bound or nominated there,
	// or moved by a consolidation). A pod without an entry attaches
	// nothing that is limited.
	PodVolumes map[types.UID]scheduling.Volumes
	// VolumeRequirements are per-pod alternatives (ORed) from volume
	// topology, resolved by the caller; a pod must satisfy one of them.
	VolumeRequirements map[types.UID][]scheduling.Requirements
	// DefaultSpread are the topology spread constraints of pods that
	// declare none, from the scheduler's default constraints with each
	// pod's selector deduced by the caller (scheduling.DefaultSpreadSelector).
	// They apply to this solve only and are never written to the pod. A
	// pod with constraints of its own keeps them.
	DefaultSpread map[types.UID][]corev1.TopologySpreadConstraint
	// Headroom are the pods of Pods (by UID) that only hold room, a
	// CapacityBuffer's virtual pods: they are placed after every other pod
	// has had its turn, so they never take room a real pod needs, and are
	// counted after them when solves are compared.
	Headroom map[types.UID]bool
	// NodeCache, when set, keeps what each existing node and its pods
	// yield (requests, resource names, label requirements) across the
	// solves of inputs sharing it: the what-ifs of one disruption pass.
	// nil: each solve derives them.
	NodeCache *NodeCache
	Options   Options
	// settlingClosed keeps pods off Settling nodes, except waiting ones:
	// Consolidate sets it when it places the candidates' pods.
	settlingClosed bool
	// waiting are the pending pods (and pods of deleting nodes) that
	// Consolidate reserved on a candidate.
	waiting map[*corev1.Pod]bool
}

// Result is the solver's decision.
type Result struct {
	// NodeClaims to launch, in creation order.
	NodeClaims []*NodeClaim
	// ExistingNodes lists the pods placed on existing or in-flight nodes.
	ExistingNodes []*ExistingPlacement
	// PodErrors explains every pod that could not be placed, in input order.
	PodErrors []PodError
	// Order lists every placement in the order it was decided; replaying it
	// reproduces the topology counts each decision saw.
	Order []Placement
	// PendingByZone counts the Pending-phase pods of Input.Pods (headroom
	// excluded) by the zone they can go to as the solve began: a zone
	// name, ZoneFlexible or ZoneNone (see EffectiveZone).
	PendingByZone map[string]int
}

// NodeClaim is a node to launch.
type NodeClaim struct {
	NodePool *karpv1.NodePool
	// Requirements are the template's requirements narrowed by the pods'
	// (plus instance-type and capacity-type In the launchable options).
	Requirements scheduling.Requirements
	// InstanceTypes fit every pod plus daemon overhead, cheapest first.
	InstanceTypes []*scheduling.InstanceType
	// InstanceType and Offering are the cheapest choice; Price its $/hour.
	InstanceType *scheduling.InstanceType
	Offering     *scheduling.Offering
	Price        float64
	Pods         []*corev1.Pod
	// DaemonOverhead is what the DaemonSets landing on InstanceType request.
	DaemonOverhead corev1.ResourceList
	// Requests is the pods' requests plus DaemonOverhead.
	Requests corev1.ResourceList
	// MinValuesRelaxed is set when minValues had to be relaxed (BestEffort).
	MinValuesRelaxed bool
}

// ExistingPlacement lists pods placed onto an existing or in-flight node.
type ExistingPlacement struct {
	Node *Node
	Pods []*corev1.Pod
}

// PodError explains why a pod could not be placed.
type PodError struct {
	Pod    *corev1.Pod
	Status *scheduling.Status
}

// Placement is one decision: the pod went to NodeClaims[NodeClaim] or, when
// NodeClaim is -1, to Node.
type Placement struct {
	Pod       *corev1.Pod
	NodeClaim int
	Node      *Node
	// Relaxed is set when the pod was placed only after one of its
	// preferences (preferred affinity, ScheduleAnyway spread, a required
	// node-affinity term but the last, PreferNoSchedule taints) was
	// relaxed.
	Relaxed bool
}

// Cost sums the price of every new NodeClaim.
func (r *Result) Cost() float64 {
	total := 0.0
	for _, nc := range r.NodeClaims {
		total += nc.Price
	}
	return total
}
