package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Output formats.
const (
	OutputText = "text"
	OutputJSON = "json"
)

// Write prints a report (*PodReport, *NodeReport, *NodePoolReport or
// *DisruptionReport) as text or JSON.
func Write(w io.Writer, report any, output string) error {
	if output == OutputJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	}
	var b strings.Builder
	switch r := report.(type) {
	case *PodReport:
		writePod(&b, r)
	case *NodeReport:
		writeNode(&b, r)
	case *NodePoolReport:
		writeNodePool(&b, r)
	case *DisruptionReport:
		writeDisruption(&b, r)
	default:
		return fmt.Errorf("cannot print %T", report)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func line(b *strings.Builder, format string, args ...any) { fmt.Fprintf(b, format+"\n", args...) }

func writePod(b *strings.Builder, r *PodReport) {
	line(b, "Pod %s (%s): %s", r.Pod, r.Phase, r.Decision)
	if r.PreferencesRelaxed {
		line(b, "  placed only once one of its preferences is relaxed")
	}
	line(b, "  %s", r.Message)
	if r.NominatedNode != "" {
		line(b, "  nominated to %s by %s", r.NominatedNode, r.NominatedBy)
	}
	if r.Scheduler != "" {
		line(b, "  kube-scheduler: %s", r.Scheduler)
	}
	if len(r.Reasons) > 0 {
		line(b, "  why, per NodePool (%s):", r.Code)
		for _, why := range r.Reasons {
			pool := why.NodePool
			if pool == "" {
				pool = "-"
			}
			line(b, "    %-20s %-28s %s", pool, why.Code, why.Message)
		}
	}
}

func writeNode(b *strings.Builder, r *NodeReport) {
	line(b, "Node %s (NodeClaim %s, NodePool %s, %s %s %s, %s): %s", r.Node, dash(r.NodeClaim), dash(r.NodePool), dash(r.InstanceType),
		dash(r.Zone), dash(r.CapacityType), price(r.PricePerHour), r.Status)
	line(b, "  %s", r.Message)
	if r.Next != nil {
		writeCommand(b, "  ", r.Next)
	}
	if r.Empty {
		line(b, "  empty: no pods would have to move")
	} else {
		line(b, "  pods to move (%d): %s", len(r.Pods), strings.Join(r.Pods, ", "))
	}
	if r.Drifted != nil {
		line(b, "  drifted: %s %s", r.Drifted.Reason, r.Drifted.Message)
	}
	if r.ExpiresAt != nil {
		line(b, "  expires at %s", r.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if r.ConsolidateAfter != "" {
		line(b, "  consolidateAfter %s, %s left", r.ConsolidateAfter, dash(r.ConsolidateAfterLeft))
	}
	for _, d := range r.DoNotDisrupt {
		until := ""
		if d.Until != nil {
			until = " until " + d.Until.UTC().Format(time.RFC3339)
		}
		line(b, "  do-not-disrupt: %s (%q)%s", d.Pod, d.Value, until)
	}
	for _, p := range r.PDBs {
		line(b, "  PDB %s allows %d disruption(s) now; covers %s", p.Name, p.DisruptionsAllowed, strings.Join(p.Pods, ", "))
	}
	if len(r.DaemonSetPodsPending) > 0 {
		line(b, "  DaemonSet pods that do not run here: %s", strings.Join(r.DaemonSetPodsPending, ", "))
	}
	writeBudgets(b, r.Budgets)
}

func writeBudgets(b *strings.Builder, budgets []BudgetSummary) {
	for _, s := range budgets {
		next := ""
		if s.NextChange != nil {
			next = fmt.Sprintf("; %d from %s", *s.AllowedAfter, s.NextChange.UTC().Format(time.RFC3339))
		}
		line(b, "  budget %-13s allows %s now%s", s.Reason, allowed(s.Allowed), next)
	}
}

func writeNodePool(b *strings.Builder, r *NodePoolReport) {
	ready := "Ready"
	if r.Ready != nil && r.Ready.Reason != "" && r.Ready.Reason != "Ready" {
		ready = r.Ready.Reason + ": " + r.Ready.Message
	}
	line(b, "NodePool %s: %d node(s), %s; %s", r.NodePool, r.Nodes, price(r.PricePerHour), ready)
	if r.Static != nil {
		line(b, "  static: replicas %d", *r.Static)
	}
	for _, l := range r.Limits {
		state := ""
		if l.Reached {
			state = " (reached)"
		}
		line(b, "  limit %s: %s of %s used%s", l.Resource, l.Used.String(), l.Limit.String(), state)
	}
	writeBudgets(b, r.Budgets)
	if len(r.Pending) > 0 {
		line(b, "  would launch for %d pending pod(s): %s", len(r.Pending), strings.Join(r.Pending, ", "))
	}
	if len(r.Blocked) > 0 {
		line(b, "  its limit keeps %d pod(s) pending: %s", len(r.Blocked), strings.Join(r.Blocked, ", "))
	}
	if len(r.Drifted) > 0 {
		line(b, "  drifted: %s", strings.Join(r.Drifted, ", "))
	}
	if len(r.Expiring) > 0 {
		line(b, "  expiring within a day: %s", strings.Join(r.Expiring, ", "))
	}
	for _, o := range r.Overlays {
		if o.Applied {
			line(b, "  NodeOverlay %s: sets the price or capacity of %d of its instance type(s)", o.Name, o.InstanceTypes)
		} else {
			line(b, "  NodeOverlay %s: %s", o.Name, o.Message)
		}
	}
	for _, s := range r.Buffers {
		if !s.Ready {
			line(b, "  CapacityBuffer %s: no room kept: %s", s.Name, s.Message)
			continue
		}
		line(b, "  CapacityBuffer %s: room for %d pod(s); the next launch keeps %d here", s.Name, s.Replicas, s.Planned)
	}
}

func writeCommand(b *strings.Builder, indent string, c *CommandSummary) {
	with := ""
	if len(c.Replacements) > 0 {
		var types []string
		for _, t := range c.Replacements {
			types = append(types, fmt.Sprintf("%s %s (%s)", t.InstanceType, t.CapacityType, price(t.PricePerHour)))
		}
		with = " with " + strings.Join(types, ", ")
	}
	line(b, "%s%s/%s (%s) %s%s, saving %s", indent, c.Method, c.Decision, c.Reason, strings.Join(c.Nodes, ","), with, price(c.SavingsPerHour))
}

func writeDisruption(b *strings.Builder, r *DisruptionReport) {
	if len(r.Commands) == 0 {
		line(b, "No disruption now.")
	}
	for i, c := range r.Commands {
		prefix := "next: "
		if i > 0 {
			prefix = "then: "
		}
		writeCommand(b, prefix, &c.CommandSummary)
		writeMoves(b, "  ", &c.Moves)
	}
	if len(r.Kept) > 0 {
		line(b, "\nKept:")
		for _, k := range r.Kept {
			code := k.Status
			if k.Code != "" {
				code = k.Code
			}
			line(b, "  %-40s %-22s %s", k.Node, code, k.Message)
		}
	}
	if r.Removed != nil {
		line(b, "\nIf the nodes went away:")
		writeMoves(b, "  ", r.Removed)
	}
}

func writeMoves(b *strings.Builder, indent string, m *Moves) {
	pods := make([]string, 0, len(m.To))
	for p := range m.To {
		pods = append(pods, p)
	}
	sort.Strings(pods)
	for _, p := range pods {
		line(b, "%s%s -> %s", indent, p, m.To[p])
	}
	pending := make([]string, 0, len(m.Pending))
	for p := range m.Pending {
		pending = append(pending, p)
	}
	sort.Strings(pending)
	for _, p := range pending {
		line(b, "%s%s stays pending: %s", indent, p, m.Pending[p])
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func price(p float64) string { return fmt.Sprintf("$%.4f/h", p) }

func allowed(n int) string {
	if n >= 1<<30 {
		return "any number"
	}
	return fmt.Sprintf("%d", n)
}
