package disruption

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// Method is one way of disrupting nodes. The controller tries its methods
// in order (NewMethods) and acts on the first command one returns. A
// method says what it is (name, consolidation type, reason, validation);
// the controller never switches on a method's type.
type Method interface {
	// Name names the method in logs, events and metrics: "emptiness",
	// "drift", "daemonset", "multi" or "single".
	Name() string
	// ConsolidationType is the consolidation_type metric label of the
	// method's commands: "empty", "multi", "single", or "" for the methods
	// that are not consolidation (drift, daemonset).
	ConsolidationType() string
	// Reason is the disruption reason the method's commands carry; budgets
	// are counted per reason.
	Reason() karpv1.DisruptionReason
	// NeedsValidation reports whether the method's commands wait out the
	// validation delay and are re-checked before they run (emptiness and
	// consolidation, as upstream) or run at once (drift, daemonset).
	NeedsValidation() bool
	// ShouldDisrupt filters the candidates the method considers. A
	// candidate it turns down because something holds the node (not merely
	// because the method does not apply) comes with that blocker; the
	// caller records it.
	ShouldDisrupt(ctx context.Context, w *world, c *Candidate) (bool, blocker)
	// ComputeCommand returns the command to run (Command.Empty() when there
	// is nothing to do). candidates passed ShouldDisrupt and are sorted by
	// disruption cost (cheapest to disrupt first); budgets are the pass's
	// for the method's reason. What the search finds against a candidate
	// is recorded in w.
	ComputeCommand(ctx context.Context, w *world, sim Simulator, budgets Budgets, candidates ...*Candidate) (Command, error)
}

// Candidate is a managed, initialized node that may be disrupted: nothing
// on it (do-not-disrupt pods or annotation, PDBs, nominations) forbids it.
type Candidate struct {
	StateNode *state.StateNode
	NodePool  *karpv1.NodePool
	// InstanceType is the node's instance type from the provider, nil when
	// the provider no longer lists it.
	InstanceType *scheduling.InstanceType
	// Price is what the node costs per hour (its offering's price); 0 when
	// unknown.
	Price        float64
	Zone         string
	CapacityType string
	// ReschedulablePods are the pods that must be placed elsewhere if the
	// node goes (not DaemonSet, mirror, terminal or terminating pods).
	ReschedulablePods []*corev1.Pod
	// DisruptionCost is upstream's eviction cost of the pods, scaled by how
	// much of its lifetime the node has left.
	DisruptionCost float64
	// PodBlocked is set when a pod (do-not-disrupt, or a PDB allowing no
	// eviction) holds a node whose NodeClaim has a terminationGracePeriod:
	// only eventual disruption (drift) may take it, its drain then bounded
	// by the grace period (upstream's rule); the blocker is recorded.
	PodBlocked bool
}

// Name is the node's name.
func (c *Candidate) Name() string { return c.StateNode.Name() }

// NodeClaim is the candidate's NodeClaim.
func (c *Candidate) NodeClaim() *karpv1.NodeClaim { return c.StateNode.NodeClaim }

// Command is one disruption decision: the candidates go, the replacements
// (if any) are launched first.
type Command struct {
	Candidates   []*Candidate
	Replacements []*simulation.NodeClaim
	Reason       karpv1.DisruptionReason
	// Method is the method that decided (its name and consolidation type
	// go into logs, events and metrics).
	Method Method
	// Savings is the price drop per hour (may be negative for drift).
	Savings float64
}

// Empty reports whether the command does nothing.
func (c Command) Empty() bool { return len(c.Candidates) == 0 }

// Decision is "delete" when the command launches nothing, else "replace".
func (c Command) Decision() string {
	if len(c.Replacements) == 0 {
		return "delete"
	}
	return "replace"
}

// String describes the command for logs and events.
func (c Command) String() string {
	names := make([]string, 0, len(c.Candidates))
	for _, cand := range c.Candidates {
		names = append(names, cand.Name())
	}
	method := ""
	if c.Method != nil {
		method = c.Method.Name()
	}
	s := fmt.Sprintf("%s/%s %s", method, c.Decision(), strings.Join(names, ","))
	if n := len(c.Replacements); n > 0 {
		types := make([]string, 0, n)
		for _, r := range c.Replacements {
			types = append(types, r.InstanceType.Name)
		}
		s += " with " + strings.Join(types, ",")
	}
	return s
}

// Budgets says how many more nodes of each NodePool may be disrupted now for
// a reason, after the nodes already being disrupted are counted.
type Budgets map[string]int

// Allows reports whether n more nodes of the NodePool may go.
func (b Budgets) Allows(nodePool string, n int) bool { return b[nodePool] >= n }

// Simulator answers "if these candidates went, where would their pods
// go?" over the cluster state of the current pass. Methods get it with
// each ComputeCommand.
type Simulator interface {
	// Simulate places every reschedulable pod of the candidates on the
	// remaining nodes and, when needed, new NodeClaims (pkg/simulation
	// Consolidate).
	Simulate(ctx context.Context, opts simulation.ConsolidationOptions, candidates ...*Candidate) (*simulation.Consolidation, error)
	// StaticReplacement renders a NodeClaim of a static NodePool's
	// template, the one-for-one replacement of one of its nodes, or says
	// why there is none.
	StaticReplacement(np *karpv1.NodePool, types []*scheduling.InstanceType) ([]*simulation.NodeClaim, string)
}
