package explain

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// A node's disruption status (NodeReport.Status).
const (
	// StatusDisrupting: the node is being deleted or drained now.
	StatusDisrupting = "Disrupting"
	// StatusWouldDisrupt: a method would disrupt the node now (Next).
	StatusWouldDisrupt = "WouldDisrupt"
	// StatusBlocked: something holds the node (Blocked says what).
	StatusBlocked = "Blocked"
	// StatusKept: nothing holds the node, but no method has a reason to
	// disrupt it (not empty, drifted, expiring, and no cheaper placement
	// found).
	StatusKept = "Kept"
	// StatusUnmanaged: no NodeClaim; karp does not disrupt the node.
	StatusUnmanaged = "Unmanaged"
)

// NodeReport is `karp explain node`'s answer.
type NodeReport struct {
	Node         string  `json:"node"`
	NodeClaim    string  `json:"nodeClaim,omitempty"`
	NodePool     string  `json:"nodePool,omitempty"`
	InstanceType string  `json:"instanceType,omitempty"`
	Zone         string  `json:"zone,omitempty"`
	CapacityType string  `json:"capacityType,omitempty"`
	PricePerHour float64 `json:"pricePerHour,omitempty"`
	// Status is one of the Status* constants; Message says it in a line.
	Status  string `json:"status"`
	Message string `json:"message"`
	// Blocked is what holds the node: the DisruptionBlocked condition's
	// reason code and message, as the controller writes them.
	Blocked *disruption.Blocker `json:"blocked,omitempty"`
	// Next is the command that would take the node now.
	Next *CommandSummary `json:"next,omitempty"`
	// Pods are the pods that would have to move (not DaemonSet, mirror or
	// terminal pods); Empty is true when there are none.
	Pods  []string `json:"pods"`
	Empty bool     `json:"empty"`
	// Drifted is the NodeClaim's Drifted condition, when True.
	Drifted *Condition `json:"drifted,omitempty"`
	// ExpiresAt is when expireAfter ends the node's life.
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`
	// ConsolidateAfter is the NodePool's setting and ConsolidateAfterLeft
	// how long until the node may be consolidated (0 when it may).
	ConsolidateAfter     string `json:"consolidateAfter,omitempty"`
	ConsolidateAfterLeft string `json:"consolidateAfterLeft,omitempty"`
	// DoNotDisrupt are the node's pods whose karpenter.sh/do-not-disrupt
	// annotation holds it now.
	DoNotDisrupt []DoNotDisruptPod `json:"doNotDisrupt,omitempty"`
	// PDBs are the PodDisruptionBudgets covering the node's pods.
	PDBs []PDBSummary `json:"pdbs,omitempty"`
	// Budgets are the NodePool's disruptions allowed now, by reason.
	Budgets []BudgetSummary `json:"budgets,omitempty"`
	// DaemonSetPodsPending are the node's DaemonSet pods that do not run:
	// created for this node, not bound (they usually do not fit).
	DaemonSetPodsPending []string `json:"daemonSetPodsPending,omitempty"`
}

// Condition is a status condition's reason and message.
type Condition struct {
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
}

// DoNotDisruptPod is a pod whose annotation holds its node, until a time
// for a duration-valued annotation.
type DoNotDisruptPod struct {
	Pod   string       `json:"pod"`
	Value string       `json:"value"`
	Until *metav1.Time `json:"until,omitempty"`
}

// PDBSummary is a PodDisruptionBudget covering some of a node's pods.
type PDBSummary struct {
	Name               string   `json:"name"`
	DisruptionsAllowed int32    `json:"disruptionsAllowed"`
	Pods               []string `json:"pods"`
}

// BudgetSummary is how many of a NodePool's nodes may be disrupted now
// for a reason, and when that changes next (within a week).
type BudgetSummary struct {
	Reason     karpv1.DisruptionReason `json:"reason"`
	Allowed    int                     `json:"allowed"`
	NextChange *metav1.Time            `json:"nextChange,omitempty"`
	// AllowedAfter is what the budgets allow from NextChange on.
	AllowedAfter *int `json:"allowedAfter,omitempty"`
}

// CommandSummary is a disruption command the controller would run.
type CommandSummary struct {
	Method string `json:"method"`
	// Decision is "delete" or "replace".
	Decision string                  `json:"decision"`
	Reason   karpv1.DisruptionReason `json:"reason"`
	Nodes    []string                `json:"nodes"`
	// Replacements are the nodes launched first.
	Replacements []Target `json:"replacements,omitempty"`
	// SavingsPerHour is the nodes' price minus the replacements'.
	SavingsPerHour float64 `json:"savingsPerHour"`
}

// Node explains why a node (by Node or NodeClaim name) is or is not
// being disrupted.
func (e *Engine) Node(ctx context.Context, name string) (*NodeReport, error) {
	p, err := e.disruptionPreview(ctx)
	if err != nil {
		return nil, err
	}
	var sn *state.StateNode
	for _, n := range p.Nodes {
		if n.Name() == name || n.NodeClaim != nil && n.NodeClaim.Name == name {
			sn = n
		}
	}
	if sn == nil {
		return nil, fmt.Errorf("no node or NodeClaim %q", name)
	}
	now := e.clock.Now()
	r := &NodeReport{Node: sn.Name(), Pods: []string{}}
	nodeLabels := sn.Labels()
	r.NodePool, r.InstanceType = nodeLabels[karpv1.NodePoolLabelKey], nodeLabels[corev1.LabelInstanceTypeStable]
	r.Zone, r.CapacityType = nodeLabels[corev1.LabelTopologyZone], nodeLabels[karpv1.CapacityTypeLabelKey]
	for _, pod := range sn.Pods {
		if state.IsReschedulable(pod) {
			r.Pods = append(r.Pods, pod.Namespace+"/"+pod.Name)
		}
	}
	r.Empty = len(r.Pods) == 0
	if !sn.Managed() {
		r.Status, r.Message = StatusUnmanaged, "the node has no NodeClaim: karp neither launched nor adopted it, and never disrupts it"
		return r, nil
	}
	nc := sn.NodeClaim
	r.NodeClaim = nc.Name
	r.PricePerHour = e.price(ctx, r.NodePool, r.InstanceType, r.Zone, r.CapacityType)
	if c := nc.StatusConditions().Get(karpv1.ConditionTypeDrifted); c != nil && c.Status == metav1.ConditionTrue {
		r.Drifted = &Condition{Reason: c.Reason, Message: c.Message}
	}
	if d := nc.Spec.ExpireAfter.Duration; d != nil {
		at := metav1.NewTime(nc.CreationTimestamp.Add(*d))
		r.ExpiresAt = &at
	}
	np := p.NodePool(r.NodePool)
	if np != nil {
		e.consolidateAfter(r, np, sn, now)
		r.Budgets = e.budgets(p, np, now)
	}
	r.DoNotDisrupt, r.PDBs = e.podBlockers(sn, now)
	r.DaemonSetPodsPending = e.pendingDaemonPods(r.Node)
	r.Status, r.Message = e.nodeStatus(r, p, sn)
	return r, nil
}

// nodeStatus decides the node's status from the preview and fills its
// blocker and the command that takes it.
func (e *Engine) nodeStatus(r *NodeReport, p *disruption.Preview, sn *state.StateNode) (string, string) {
	status, msg, blocked, next := verdict(p, sn)
	r.Blocked, r.Next = blocked, next
	if status == StatusKept && r.Empty {
		msg = "the node is empty, but the pending pods (or the pods of nodes being deleted) need its room"
	}
	return status, msg
}

// verdict is a managed node's status in the preview: disrupting, taken
// by a command, blocked, or kept.
func verdict(p *disruption.Preview, sn *state.StateNode) (string, string, *disruption.Blocker, *CommandSummary) {
	if sn.MarkedForDeletion || sn.NodeClaim.DeletionTimestamp != nil {
		return StatusDisrupting, "the node is being deleted (drained, then its instance terminated)", nil, nil
	}
	for i, cmd := range p.Commands {
		if !slices.ContainsFunc(cmd.Candidates, func(c *disruption.Candidate) bool { return c.StateNode == sn }) {
			continue
		}
		msg := fmt.Sprintf("%s would %s it now (%s)", cmd.Method.Name(), cmd.Decision(), cmd.Reason)
		if i > 0 {
			msg = fmt.Sprintf("%s would %s it once the %s command before it is done", cmd.Method.Name(), cmd.Decision(), p.Commands[0].Method.Name())
		}
		return StatusWouldDisrupt, msg, nil, summarize(cmd)
	}
	if b, ok := p.Blocked[sn.Name()]; ok {
		return StatusBlocked, b.Reason + ": " + b.Message, &b, nil
	}
	return StatusKept, "nothing holds the node, and no method has a reason to disrupt it now: it is not empty, drifted or expiring, and no cheaper placement was found", nil, nil
}

// summarize describes a command.
func summarize(cmd disruption.Command) *CommandSummary {
	s := &CommandSummary{Method: cmd.Method.Name(), Decision: cmd.Decision(), Reason: cmd.Reason, SavingsPerHour: cmd.Savings}
	for _, c := range cmd.Candidates {
		s.Nodes = append(s.Nodes, c.Name())
	}
	for _, nc := range cmd.Replacements {
		t := Target{NodePool: nc.NodePool.Name, InstanceType: nc.InstanceType.Name, PricePerHour: nc.Price}
		if nc.Offering != nil {
			t.Zone, t.CapacityType = nc.Offering.Zone, nc.Offering.CapacityType
		}
		s.Replacements = append(s.Replacements, t)
	}
	return s
}

// price is the catalog price of the node's offering.
func (e *Engine) price(ctx context.Context, nodePool, instanceType, zone, capacityType string) float64 {
	for _, it := range e.instanceTypes(ctx, nodePool) {
		if it.Name != instanceType {
			continue
		}
		if o, ok := it.OfferingIn(zone, capacityType); ok {
			return o.Price
		}
	}
	return 0
}

// consolidateAfter fills when the node may be consolidated, as the
// disruption controller computes it.
func (e *Engine) consolidateAfter(r *NodeReport, np *karpv1.NodePool, sn *state.StateNode, now time.Time) {
	after := np.Spec.Disruption.ConsolidateAfter.Duration
	if after == nil {
		r.ConsolidateAfter = "Never"
		return
	}
	r.ConsolidateAfter = after.String()
	last := disruption.LastActivity(sn.NodeClaim, sn.Pods)
	r.ConsolidateAfterLeft = max(0, last.Add(*after).Sub(now)).Round(time.Second).String()
}

// pendingDaemonPods are the DaemonSet pods made for the node (the
// DaemonSet controller pins each to its node by metadata.name) that are
// not bound.
func (e *Engine) pendingDaemonPods(node string) []string {
	var out []string
	for i := range e.pods {
		pod := &e.pods[i]
		if pod.Spec.NodeName != "" || !state.IsOwnedBy(pod, "DaemonSet") || pod.DeletionTimestamp != nil ||
			pod.Spec.Affinity == nil || pod.Spec.Affinity.NodeAffinity == nil ||
			pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
			continue
		}
		for _, term := range pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			if slices.ContainsFunc(term.MatchFields, func(f corev1.NodeSelectorRequirement) bool {
				return f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && slices.Contains(f.Values, node)
			}) {
				out = append(out, pod.Namespace+"/"+pod.Name)
				break
			}
		}
	}
	return out
}

// podBlockers lists the node's pods held by do-not-disrupt and the PDBs
// covering its pods.
func (e *Engine) podBlockers(sn *state.StateNode, now time.Time) ([]DoNotDisruptPod, []PDBSummary) {
	var dnd []DoNotDisruptPod
	pdbs := map[string]*PDBSummary{}
	for _, pod := range sn.Pods {
		if !state.IsReschedulable(pod) {
			continue
		}
		key := pod.Namespace + "/" + pod.Name
		if scheduling.DoNotDisruptActive(pod, now) {
			d := DoNotDisruptPod{Pod: key, Value: pod.Annotations[karpv1.DoNotDisruptAnnotationKey]}
			if v, err := time.ParseDuration(d.Value); err == nil && pod.Status.StartTime != nil {
				until := metav1.NewTime(pod.Status.StartTime.Add(v))
				d.Until = &until
			}
			dnd = append(dnd, d)
		}
		for i := range e.pdbs {
			pdb := &e.pdbs[i]
			if pdb.Namespace != pod.Namespace || pdb.Spec.Selector == nil {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
				continue
			}
			name := pdb.Namespace + "/" + pdb.Name
			if pdbs[name] == nil {
				pdbs[name] = &PDBSummary{Name: name, DisruptionsAllowed: pdb.Status.DisruptionsAllowed}
			}
			pdbs[name].Pods = append(pdbs[name].Pods, key)
		}
	}
	out := make([]PDBSummary, 0, len(pdbs))
	for _, s := range pdbs {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return dnd, out
}

// budgets are the NodePool's allowed disruptions now, by reason, as the
// disruption pass counts them, with the next change of its budgets.
func (e *Engine) budgets(p *disruption.Preview, np *karpv1.NodePool, now time.Time) []BudgetSummary {
	var out []BudgetSummary
	for _, reason := range []karpv1.DisruptionReason{karpv1.DisruptionReasonEmpty, karpv1.DisruptionReasonDrifted, karpv1.DisruptionReasonUnderutilized} {
		b := BudgetSummary{Reason: reason, Allowed: p.Budgets[reason][np.Name]}
		if at, n, ok := nextBudgetChange(np, reason, e.poolNodes(p, np.Name), now); ok {
			t := metav1.NewTime(at)
			b.NextChange, b.AllowedAfter = &t, &n
		}
		out = append(out, b)
	}
	return out
}

// poolNodes counts the NodePool's initialized nodes (what budgets scale).
func (e *Engine) poolNodes(p *disruption.Preview, nodePool string) int {
	if e.poolSizes == nil {
		e.poolSizes = map[string]int{}
		for _, sn := range p.Nodes {
			if sn.Managed() && sn.Initialized() {
				e.poolSizes[sn.NodePool()]++
			}
		}
	}
	return e.poolSizes[nodePool]
}

// budgetHorizon is how far ahead nextBudgetChange looks.
const budgetHorizon = 7 * 24 * time.Hour

// nextBudgetChange finds when the budgets' allowance for reason over
// numNodes nodes next changes, and to what: it steps from one budget
// window opening or closing to the next (the only instants the allowance
// can change) until the allowance differs.
func nextBudgetChange(np *karpv1.NodePool, reason karpv1.DisruptionReason, numNodes int, now time.Time) (time.Time, int, bool) {
	cur, err := np.GetAllowedDisruptionsByReason(now, numNodes, reason)
	if err != nil {
		return time.Time{}, 0, false
	}
	for t := now; t.Sub(now) <= budgetHorizon; {
		next, found := time.Time{}, false
		for i := range np.Spec.Disruption.Budgets {
			at, ok, err := np.Spec.Disruption.Budgets[i].NextChange(t)
			if err != nil || !ok {
				continue
			}
			if !found || at.Before(next) {
				next, found = at, true
			}
		}
		if !found || next.Sub(now) > budgetHorizon {
			return time.Time{}, 0, false
		}
		if n, err := np.GetAllowedDisruptionsByReason(next, numNodes, reason); err == nil && n != cur {
			return next, n, true
		}
		t = next
	}
	return time.Time{}, 0, false
}
