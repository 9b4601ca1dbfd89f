package view

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/api/resource"
)

// ANSI sequences: move home and clear the screen; bold on and off.
const (
	clearScreen = "\x1b[H\x1b[2J"
	bold        = "\x1b[1m"
	plain       = "\x1b[0m"
)

// Render draws snap as a table under header (one or more lines, for
// example where the kubeconfig is). With clear, it first clears the
// terminal so each frame replaces the last.
func Render(w io.Writer, header string, snap Snapshot, clear bool) error {
	var b strings.Builder
	if clear {
		b.WriteString(clearScreen)
	}
	if header != "" {
		b.WriteString(strings.TrimRight(header, "\n") + "\n\n")
	}
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tNODEPOOL\tINSTANCE TYPE\tZONE\tCAPACITY\t$/HOUR\tPODS\tCPU REQ/ALLOC\tMEMORY REQ/ALLOC")
	for _, row := range snap.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n",
			nodeName(row), orDash(row.NodePool), orDash(row.InstanceType), orDash(row.Zone), orDash(row.CapacityType),
			price(row), row.Pods,
			usage(row.CPURequested, row.CPUAllocatable, cores), usage(row.MemoryRequested, row.MemoryAllocatable, gibibytes))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Bold the header row after alignment: tabwriter would count the
	// escape sequences as width.
	head, rows, _ := strings.Cut(table.String(), "\n")
	b.WriteString(bold + strings.TrimRight(head, " ") + plain + "\n" + rows)
	fmt.Fprintf(&b, "\n%s%d nodes, $%.4f/hour%s; %d pods running, %d pending\n",
		bold, len(snap.Nodes), snap.TotalPrice, plain, snap.RunningPods, snap.PendingPods)
	writeWhy(&b, snap)
	_, err := io.WriteString(w, b.String())
	return err
}

func nodeName(row NodeRow) string {
	switch {
	case row.MarkedForDeletion:
		return row.Name + " (deleting)"
	case !row.Ready:
		return row.Name + " (not ready)"
	}
	return row.Name
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func price(row NodeRow) string {
	if !row.Priced {
		return "-"
	}
	return fmt.Sprintf("%.4f", row.Price)
}

// usage renders "requested/allocatable (percent)" in the given unit.
func usage(requested, allocatable resource.Quantity, unit func(resource.Quantity) string) string {
	pct := "-"
	if !allocatable.IsZero() {
		pct = fmt.Sprintf("%d%%", requested.MilliValue()*100/allocatable.MilliValue())
	}
	return fmt.Sprintf("%s/%s (%s)", unit(requested), unit(allocatable), pct)
}

func cores(q resource.Quantity) string {
	return fmt.Sprintf("%.2f", float64(q.MilliValue())/1000)
}

func gibibytes(q resource.Quantity) string {
	return fmt.Sprintf("%.1fGi", float64(q.Value())/(1<<30))
}

// maxWhyLines bounds each list below the table, so the frame fits a
// terminal.
const maxWhyLines = 10

// writeWhy lists the pending pods with karp's one-line reason, then the
// nodes karp keeps with theirs.
func writeWhy(b *strings.Builder, snap Snapshot) {
	if len(snap.Pending) > 0 {
		fmt.Fprintf(b, "\n%sPending%s (karp explain pod NAMESPACE/NAME for more)\n", bold, plain)
		for i, p := range snap.Pending {
			if i == maxWhyLines {
				fmt.Fprintf(b, "  ... and %d more\n", len(snap.Pending)-i)
				break
			}
			fmt.Fprintf(b, "  %s: %s\n", p.Pod, orText(p.Reason, "waiting for the kube-scheduler or karp"))
		}
	}
	var kept []NodeRow
	for _, row := range snap.Nodes {
		if row.WhyNot != "" {
			kept = append(kept, row)
		}
	}
	if len(kept) > 0 {
		fmt.Fprintf(b, "\n%sWhy nodes stay%s (karp explain node NAME for more)\n", bold, plain)
		for i, row := range kept {
			if i == maxWhyLines {
				fmt.Fprintf(b, "  ... and %d more\n", len(kept)-i)
				break
			}
			fmt.Fprintf(b, "  %s: %s\n", row.Name, row.WhyNot)
		}
	}
}

func orText(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}
