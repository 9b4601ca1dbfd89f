package invariants

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Kind names a broken promise.
type Kind string

// The kinds of Violation. The continuous ones come from the Monitor, the
// others from CheckSettled.
const (
	// KindPDBViolation: a voluntary disruption took a PodDisruptionBudget's
	// healthy pods below its desired healthy count.
	KindPDBViolation Kind = "PDBViolation"
	// KindDoNotDisrupt: a karpenter.sh/do-not-disrupt pod was evicted,
	// deleted or lost with a node karp deleted.
	KindDoNotDisrupt Kind = "DoNotDisruptDisrupted"
	// KindLeakedInstance: the provider has an instance no NodeClaim owns.
	KindLeakedInstance Kind = "LeakedInstance"
	// KindDuplicateInstance: the provider has two instances for one
	// NodeClaim.
	KindDuplicateInstance Kind = "DuplicateInstance"
	// KindSharedInstance: two NodeClaims claim one instance.
	KindSharedInstance Kind = "SharedInstance"
	// KindMissingInstance: a launched NodeClaim whose instance the provider
	// does not have.
	KindMissingInstance Kind = "MissingInstance"
	// KindNodeClaimNotSettled: a NodeClaim still launching, registering,
	// initializing or terminating.
	KindNodeClaimNotSettled Kind = "NodeClaimNotSettled"
	// KindEmptyNode: a node with no workload pods that its NodePool's
	// consolidation should have removed.
	KindEmptyNode Kind = "EmptyNode"
	// KindStuckTaint: a karp taint (karpenter.sh/disrupted,
	// karp.sh/batch-hold) on a node nothing is disrupting.
	KindStuckTaint Kind = "StuckTaint"
	// KindPodNotRunning: a pod that is not Running and Ready, or is
	// terminating.
	KindPodNotRunning Kind = "PodNotRunning"
)

// Violation is one broken promise.
type Violation struct {
	Kind Kind
	// Object names what broke it: namespace/name of a pod or PDB, or the
	// name of a node, NodeClaim or instance.
	Object string
	// Node is the node involved, when there is one.
	Node string
	// At is when the monitor saw it (CheckSettled: when it checked).
	At time.Time
	// Cause is how the pods were disrupted, for the monitor's kinds. A PDB
	// violation by eviction means the API server's budget check let it
	// through on a stale budget status (pods turned unready just before);
	// by deletion or with a node, karp bypassed the check.
	Cause   Cause
	Message string
}

func (v Violation) String() string {
	node := ""
	if v.Node != "" {
		node = " on node " + v.Node
	}
	cause := ""
	if v.Cause != "" {
		cause = " (" + string(v.Cause) + ")"
	}
	return fmt.Sprintf("%s %s%s %s%s: %s", v.At.UTC().Format("15:04:05.000"), v.Kind, cause, v.Object, node, v.Message)
}

// Cause is how a pod was voluntarily disrupted.
type Cause string

const (
	// CauseEvicted: through the Eviction API (DisruptionTarget condition,
	// reason EvictionByEvictionAPI).
	CauseEvicted Cause = "Evicted"
	// CauseDeleted: deleted directly, without an eviction, while on a node
	// karp was disrupting or with no controller to have deleted it.
	CauseDeleted Cause = "Deleted"
	// CauseLostWithNode: still on its node when the Node was deleted.
	CauseLostWithNode Cause = "LostWithNode"
)

// Disruption is one pod voluntarily disrupted.
type Disruption struct {
	Pod   string
	Node  string
	Cause Cause
	At    time.Time
	// Healthy is whether the pod was Running and Ready when disrupted.
	Healthy bool
	// DoNotDisrupt is whether it carried karpenter.sh/do-not-disrupt: "true".
	DoNotDisrupt bool
}

// Report is what the monitor saw between Start and Stop, plus whatever
// CheckSettled found when added with Add.
type Report struct {
	// Evictions is how many pods the Eviction API evicted.
	Evictions int
	// Disruptions lists every voluntary disruption, evictions included,
	// except those on involuntary nodes.
	Disruptions []Disruption
	// Unobserved counts pods that vanished while the monitor's watch was
	// down, so how they went is unknown; UnobservedPods names them.
	Unobserved     int
	UnobservedPods []string
	// WatchErrors counts the times one of the monitor's watches failed
	// and its informer had to list again (after an API server or etcd
	// restart, the resource version it watched from was gone). A watch
	// that ends with its connection and resumes where it stopped loses
	// nothing and is not counted.
	WatchErrors int
	// Violations are the broken promises, in the order seen.
	Violations []Violation
	// Excused are violations on nodes the harness reported Involuntary.
	Excused []Violation
	// Involuntary lists the nodes the harness reported.
	Involuntary []string
}

// Add appends violations (from CheckSettled) to the report.
func (r *Report) Add(vs ...Violation) { r.Violations = append(r.Violations, vs...) }

// Count returns how many violations of the kind the report holds.
func (r *Report) Count(kind Kind) int {
	n := 0
	for _, v := range r.Violations {
		if v.Kind == kind {
			n++
		}
	}
	return n
}

// CountCause returns how many disruptions had the cause.
func (r *Report) CountCause(cause Cause) int {
	n := 0
	for _, d := range r.Disruptions {
		if d.Cause == cause {
			n++
		}
	}
	return n
}

// String is a summary: the counts, then one line per violation, per
// excused violation, and the unobserved pods.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "evictions=%d disruptions=%d (evicted=%d deleted=%d lost-with-node=%d) unobserved=%d watch-errors=%d involuntary-nodes=%d",
		r.Evictions, len(r.Disruptions), r.CountCause(CauseEvicted), r.CountCause(CauseDeleted), r.CountCause(CauseLostWithNode),
		r.Unobserved, r.WatchErrors, len(r.Involuntary))
	counts := map[Kind]int{}
	for _, v := range r.Violations {
		counts[v.Kind]++
	}
	kinds := make([]string, 0, len(counts))
	for k := range counts {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	fmt.Fprintf(&b, " violations=%d", len(r.Violations))
	for _, k := range kinds {
		fmt.Fprintf(&b, " %s=%d", k, counts[Kind(k)])
	}
	fmt.Fprintf(&b, " excused=%d", len(r.Excused))
	for _, v := range r.Violations {
		b.WriteString("\n  ")
		b.WriteString(v.String())
	}
	for _, v := range r.Excused {
		b.WriteString("\n  excused: ")
		b.WriteString(v.String())
	}
	if len(r.UnobservedPods) > 0 {
		fmt.Fprintf(&b, "\n  unobserved: %s", strings.Join(r.UnobservedPods, ", "))
	}
	return b.String()
}
