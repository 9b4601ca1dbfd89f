package simulate

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Output formats.
const (
	OutputTable = "table"
	OutputJSON  = "json"
	OutputYAML  = "yaml"
)

// Write renders the report in format (table, json or yaml).
func Write(w io.Writer, rep *Report, format string) error {
	switch format {
	case "", OutputTable:
		return WriteTable(w, rep)
	case OutputJSON:
		return WriteJSON(w, rep)
	case OutputYAML:
		return WriteYAML(w, rep)
	}
	return fmt.Errorf("unknown output format %q (want table, json or yaml)", format)
}

// WriteJSON prints the report as one indented JSON document.
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteYAML prints the NodeClaims karp would create as multi-document
// YAML, each preceded by a comment with its choice and price.
func WriteYAML(w io.Writer, rep *Report) error {
	for i, nc := range rep.claims {
		s := rep.NodeClaims[i]
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(nc)
		if err != nil {
			return fmt.Errorf("encoding NodeClaim: %w", err)
		}
		// A NodeClaim is created without status or timestamps.
		delete(obj, "status")
		unstructured.RemoveNestedField(obj, "metadata", "creationTimestamp")
		data, err := yaml.Marshal(obj)
		if err != nil {
			return fmt.Errorf("encoding NodeClaim: %w", err)
		}
		if _, err := fmt.Fprintf(w, "---\n# %s %s %s $%s/hour, %d pods\n%s", s.InstanceType, s.Zone, s.CapacityType,
			price(s.PricePerHour), len(s.Pods), data); err != nil {
			return err
		}
	}
	return nil
}

// WriteTable prints one row per new node, the totals, every pending pod's
// reasons and the warnings.
func WriteTable(w io.Writer, rep *Report) error {
	if len(rep.NodeClaims) == 0 {
		fmt.Fprintln(w, "No new nodes.")
	} else if err := writeRows(w, rep.NodeClaims); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nTotal: %s, %s, $%s/hour, $%s/month\n", plural(rep.TotalNodes, "node"), plural(rep.TotalPods, "pod"),
		price(rep.TotalPricePerHour), strconv.FormatFloat(rep.TotalPricePerMonth, 'f', 2, 64))
	existing := 0
	for _, e := range rep.ExistingNodes {
		existing += len(e.Pods)
	}
	if existing > 0 {
		fmt.Fprintf(w, "%s fit on %s\n", plural(existing, "pod"), plural(len(rep.ExistingNodes), "existing node"))
	}
	writePending(w, rep.Unschedulable)
	if err := writeBuffers(w, rep); err != nil {
		return err
	}
	if err := writeRequests(w, rep.ProvisioningRequests); err != nil {
		return err
	}
	if len(rep.Warnings) > 0 {
		fmt.Fprintf(w, "\nWarnings:\n")
		for _, msg := range rep.Warnings {
			fmt.Fprintf(w, "  %s\n", msg)
		}
	}
	return nil
}

// writeRows prints one aligned row per NodeClaim.
func writeRows(w io.Writer, claims []NodeClaimSummary) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODEPOOL\tINSTANCE TYPE\tZONE\tCAPACITY\t$/HOUR\tPODS\tCPU REQ/ALLOC\tMEMORY REQ/ALLOC\tDAEMONSET OVERHEAD")
	for _, s := range claims {
		pool, pods := s.NodePool, strconv.Itoa(len(s.Pods))
		if s.Static {
			pool += " (static)"
		}
		if s.BufferPods > 0 {
			pods += fmt.Sprintf(" +%d buffer", s.BufferPods)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", pool, s.InstanceType, s.Zone, s.CapacityType,
			price(s.PricePerHour), pods,
			cpu(s.Requests)+"/"+cpu(s.Allocatable), memory(s.Requests)+"/"+memory(s.Allocatable), overhead(s.DaemonSetOverhead))
	}
	return tw.Flush()
}

// writePending lists pending pods, grouping pods with identical reasons.
func writePending(w io.Writer, pending []Unschedulable) {
	if len(pending) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s would stay pending:\n", plural(len(pending), "pod"))
	type group struct {
		pods    []string
		code    string
		reasons []string
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, u := range pending {
		key := u.Code + "\x00" + strings.Join(u.Reasons, "\x00")
		g, ok := byKey[key]
		if !ok {
			g = &group{code: u.Code, reasons: u.Reasons}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.pods = append(g.pods, u.Pod)
	}
	for _, g := range groups {
		shown := g.pods
		if len(shown) > maxPodsPerGroup {
			shown = shown[:maxPodsPerGroup]
		}
		for _, p := range shown {
			fmt.Fprintf(w, "  %s\n", p)
		}
		if more := len(g.pods) - len(shown); more > 0 {
			fmt.Fprintf(w, "  ... and %d more pods with the same reasons (-o json lists every pod)\n", more)
		}
		fmt.Fprintf(w, "    why (%s):\n", g.code)
		for _, r := range g.reasons {
			fmt.Fprintf(w, "      %s\n", r)
		}
	}
}

// maxPodsPerGroup caps the pods named per group of identical reasons.
const maxPodsPerGroup = 10

// plural returns "1 node" or "2 nodes".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// price prints dollars with 4 decimals, trailing zeros kept to 2.
func price(x float64) string {
	s := strconv.FormatFloat(x, 'f', 4, 64)
	for strings.HasSuffix(s, "0") && len(s)-strings.IndexByte(s, '.') > 3 {
		s = s[:len(s)-1]
	}
	return s
}

// cpu prints cores, e.g. "3.2".
func cpu(rl corev1.ResourceList) string {
	q := rl[corev1.ResourceCPU]
	return strconv.FormatFloat(float64(q.MilliValue())/1000, 'f', -1, 64)
}

// memory prints GiB with one decimal, e.g. "12.3Gi".
func memory(rl corev1.ResourceList) string {
	q := rl[corev1.ResourceMemory]
	return strconv.FormatFloat(float64(q.Value())/(1<<30), 'f', 1, 64) + "Gi"
}

// overhead prints the DaemonSet overhead's cpu and memory, "-" when none.
func overhead(rl corev1.ResourceList) string {
	c, m := rl[corev1.ResourceCPU], rl[corev1.ResourceMemory]
	if c.IsZero() && m.IsZero() {
		return "-"
	}
	return "cpu " + quantity(c) + ", memory " + quantity(m)
}

func quantity(q resource.Quantity) string { return q.String() }

// writeBuffers prints the room kept per CapacityBuffer and its price.
func writeBuffers(w io.Writer, rep *Report) error {
	if len(rep.Buffers) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nCapacityBuffer room (virtual pods, placed after the real ones; $%s/hour of the total):\n", price(rep.BufferPricePerHour))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  BUFFER\tPODS\tON EXISTING NODES\tON NEW NODES\tUNPLACED\t$/HOUR")
	for _, b := range rep.Buffers {
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%s\n", b.Buffer, b.Replicas, b.OnExisting, b.OnNew, b.Unplaced, price(b.PricePerHour))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, b := range rep.Buffers {
		if b.Reason != "" {
			fmt.Fprintf(w, "  %s: %d pod(s) fit nowhere: %s\n", b.Buffer, b.Unplaced, b.Reason)
		}
	}
	return nil
}

// writeRequests prints each ProvisioningRequest's answer and, for an
// atomic one that fits, the nodes it would launch.
func writeRequests(w io.Writer, reqs []RequestSummary) error {
	if len(reqs) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nProvisioningRequests (each on its own, after the pending pods):\n")
	for _, r := range reqs {
		verdict := "does not fit"
		switch {
		case r.Fits && r.isAtomic():
			verdict = fmt.Sprintf("fits: launches %s, $%s/hour", plural(len(r.NodeClaims), "node"), price(r.PricePerHour))
		case r.Fits:
			verdict = "fits on existing capacity"
		}
		fmt.Fprintf(w, "  %s (%s, %s): %s\n    %s\n", r.Request, r.Class, plural(r.Pods, "pod"), verdict, r.Message)
		if len(r.NodeClaims) > 0 {
			var buf strings.Builder
			if err := writeRows(&buf, r.NodeClaims); err != nil {
				return err
			}
			for _, line := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
				fmt.Fprintf(w, "    %s\n", line)
			}
		}
	}
	return nil
}
