package disruption

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// Method is one way of disrupting nodes. The controller tries its methods
// in order (NewMethods) and acts on the first command one returns.
type Method interface {
	// Reason is the disruption reason the method's commands carry; budgets
	// are counted per reason.
	Reason() karpv1.DisruptionReason
	// ShouldDisrupt filters the candidates the method considers.
	ShouldDisrupt(ctx context.Context, c *Candidate) bool
	// ComputeCommand returns the command to run (Command.Empty() when there
	// is nothing to do). candidates passed ShouldDisrupt, are sorted by
	// disruption cost (cheapest to disrupt first) and fit the budgets.
	ComputeCommand(ctx context.Context, budgets Budgets, candidates ...*Candidate) (Command, error)
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
	// Method names the method that decided (for logs, events and metrics):
	// "emptiness", "drift", "multi", "single", "daemonset".
	Method string
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
	s := fmt.Sprintf("%s/%s %s", c.Method, c.Decision(), strings.Join(names, ","))
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
// go?" over the cluster state of the current pass. Methods get it at
// construction.
type Simulator interface {
	// Simulate places every reschedulable pod of the candidates on the
	// remaining nodes and, when needed, new NodeClaims (pkg/simulation
	// Consolidate).
	Simulate(ctx context.Context, opts simulation.ConsolidationOptions, candidates ...*Candidate) (*simulation.Consolidation, error)
}

// Clock is what methods read time from.
type Clock interface{ Now() time.Time }
