package scheduling

import (
	"regexp"
	"strings"
)

// Code says how a scheduling attempt ended, in the kube-scheduler sense.
type Code int

const (
	// Success means the pod was placed.
	Success Code = iota
	// Unschedulable means the pod does not fit now but could once the
	// cluster changes (limits freed, topology rebalanced, pods placed).
	Unschedulable
	// UnschedulableAndUnresolvable means the pod cannot fit in any NodePool
	// as configured (taints, requirements, no large enough instance type);
	// only a configuration change helps.
	UnschedulableAndUnresolvable
	// Error means the solver itself failed (bad input); it is not a fit result.
	Error
)

// String names the code.
func (c Code) String() string {
	switch c {
	case Success:
		return "Success"
	case Unschedulable:
		return "Unschedulable"
	case UnschedulableAndUnresolvable:
		return "UnschedulableAndUnresolvable"
	}
	return "Error"
}

// ReasonCode is the stable, machine-readable name of why a pod cannot go
// somewhere. The same codes appear in the pods' FailedScheduling events
// (in brackets after each message), in `karp explain` and `karp simulate`,
// so every place that says why agrees.
type ReasonCode string

// The reasons a NodePool (or the whole solve) cannot take a pod.
const (
	// ReasonTaintNotTolerated: the NodePool's taints include one the pod
	// does not tolerate.
	ReasonTaintNotTolerated ReasonCode = "TaintNotTolerated"
	// ReasonIncompatibleRequirements: the pod's node selector or affinity
	// and the NodePool's requirements share no value for a key.
	ReasonIncompatibleRequirements ReasonCode = "IncompatibleRequirements"
	// ReasonNoInstanceTypeOffered: no instance type of the NodePool has an
	// available offering that meets both sides' requirements (a zone,
	// architecture or capacity type nothing offers).
	ReasonNoInstanceTypeOffered ReasonCode = "NoInstanceTypeOffered"
	// ReasonInstanceTypesTooSmall: no instance type of the NodePool holds
	// the pod's requests next to its DaemonSets.
	ReasonInstanceTypesTooSmall ReasonCode = "InstanceTypesTooSmall"
	// ReasonHostPortConflict: a DaemonSet takes the host port the pod asks
	// for.
	ReasonHostPortConflict ReasonCode = "HostPortConflict"
	// ReasonMinValues: the instance types that fit do not meet the
	// NodePool's minValues.
	ReasonMinValues ReasonCode = "MinValues"
	// ReasonNodePoolLimit: the NodePool's limits leave no room for the
	// node the pod needs.
	ReasonNodePoolLimit ReasonCode = "NodePoolLimit"
	// ReasonClusterLimit: the cluster-wide limits (--cluster-limits) leave
	// no room for the node the pod needs, whichever NodePool launches it.
	ReasonClusterLimit ReasonCode = "ClusterLimit"
	// ReasonTopology: a topology spread constraint or (anti-)affinity term
	// cannot be met by a new node of the NodePool.
	ReasonTopology ReasonCode = "Topology"
	// ReasonNodePoolNotReady: the NodePool (or its NodeClass) is not Ready,
	// or its instance types cannot be read, so karp launches nothing from it.
	ReasonNodePoolNotReady ReasonCode = "NodePoolNotReady"
	// ReasonNoNodePool: no NodePool can launch nodes at all.
	ReasonNoNodePool ReasonCode = "NoNodePool"
	// ReasonNotSimulated: the pod uses something karp does not simulate
	// (dynamic resource allocation).
	ReasonNotSimulated ReasonCode = "NotSimulated"
	// ReasonInvalidPod: the pod's node constraints are invalid or ask for
	// no karp node; karp does not provision for it.
	ReasonInvalidPod ReasonCode = "InvalidPod"
	// ReasonVolume: the pod's volumes cannot be resolved (a claim, volume
	// or StorageClass is missing) or their limits are reached.
	ReasonVolume ReasonCode = "Volume"
	// ReasonSolveError: the solve itself stopped (cancelled, bad input).
	ReasonSolveError ReasonCode = "SolveError"
)

// Reason is one structured reason: which NodePool (empty when the reason
// is not a NodePool's), its code and the human message with the numbers.
type Reason struct {
	NodePool string     `json:"nodePool,omitempty"`
	Code     ReasonCode `json:"code"`
	Message  string     `json:"message"`
}

// String is the reason as events and logs print it:
// "NodePool default: message [Code]".
func (r Reason) String() string {
	var b strings.Builder
	if r.NodePool != "" {
		b.WriteString("NodePool " + r.NodePool + ": ")
	}
	b.WriteString(r.Message)
	if r.Code != "" {
		b.WriteString(" [" + string(r.Code) + "]")
	}
	return b.String()
}

// Because builds a reason that is not a NodePool's.
func Because(code ReasonCode, message string) Reason {
	return Reason{Code: code, Message: message}
}

// PoolReason builds a NodePool's reason.
func PoolReason(nodePool string, code ReasonCode, message string) Reason {
	return Reason{NodePool: nodePool, Code: code, Message: message}
}

// Status is the outcome of trying to place a pod: a code and the reasons,
// one per NodePool (or node) tried, stable for the same input.
type Status struct {
	Code    Code
	Reasons []Reason
}

// IsSuccess reports whether the pod was placed.
func (s *Status) IsSuccess() bool { return s == nil || s.Code == Success }

// Message joins the reasons with "; ".
func (s *Status) Message() string {
	if s == nil {
		return ""
	}
	parts := make([]string, len(s.Reasons))
	for i, r := range s.Reasons {
		parts[i] = r.String()
	}
	return strings.Join(parts, "; ")
}

// NewStatus builds a status.
func NewStatus(code Code, reasons ...Reason) *Status {
	return &Status{Code: code, Reasons: reasons}
}

// reasonEnd matches one printed reason up to its code: the shortest text
// ending in " [Code]" followed by the separator or the end. Splitting at
// the codes (not at every "; ") keeps a message that itself holds "; "
// in one piece.
var reasonEnd = regexp.MustCompile(`(.*?) \[([A-Za-z]+)\](?:; |$)`)

// reasonPool takes the NodePool off the front of a reason (after any
// prefix, such as the recorder's "Failed to schedule pod, ").
var reasonPool = regexp.MustCompile(`^(?:.*?NodePool ([^ :]+): )?(.*)$`)

// ParseReasons reads back the reasons of a message Status.Message (or a
// FailedScheduling event) printed; text without a code is skipped.
func ParseReasons(message string) []Reason {
	var out []Reason
	for _, m := range reasonEnd.FindAllStringSubmatch(strings.TrimSpace(message), -1) {
		p := reasonPool.FindStringSubmatch(strings.TrimSpace(m[1]))
		out = append(out, Reason{NodePool: p[1], Code: ReasonCode(m[2]), Message: p[2]})
	}
	return out
}
