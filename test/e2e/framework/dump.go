package framework

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// dumpLimit bounds each section of DumpCluster, so a failure in a large
// run prints what matters without drowning the test's output.
const dumpLimit = 60

// dumped holds the tests whose state DumpCluster printed.
var dumped sync.Map

// DumpCluster logs the state a failed test leaves behind, one line per
// object: NodeClaims, Nodes, the pods outside kube-system that are not
// Running and Ready, and the latest Warning events and events of karp's.
// A failure seen only in CI can then be read from the test's output
// alone, the cluster's logs being gone with the machine.
func DumpCluster(t testing.TB, cl client.Client) {
	t.Helper()
	if _, done := dumped.LoadOrStore(t, true); done {
		return // a second replica's clean-up: the state is printed once
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b strings.Builder
	section := func(title string, lines []string) {
		fmt.Fprintf(&b, "%s (%d):\n", title, len(lines))
		if len(lines) > dumpLimit {
			fmt.Fprintf(&b, "  ... %d earlier left out\n", len(lines)-dumpLimit)
			lines = lines[len(lines)-dumpLimit:]
		}
		for _, l := range lines {
			b.WriteString("  " + l + "\n")
		}
	}
	var claims karpv1.NodeClaimList
	if err := cl.List(ctx, &claims); err != nil {
		fmt.Fprintf(&b, "listing NodeClaims: %v\n", err)
	}
	section("NodeClaims", dumpLines(claims.Items, describeNodeClaim))
	var nodes corev1.NodeList
	if err := cl.List(ctx, &nodes); err != nil {
		fmt.Fprintf(&b, "listing Nodes: %v\n", err)
	}
	section("Nodes", dumpLines(nodes.Items, describeNode))
	var pods corev1.PodList
	if err := cl.List(ctx, &pods); err != nil {
		fmt.Fprintf(&b, "listing Pods: %v\n", err)
	}
	pods.Items = slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool {
		return p.Namespace == metav1.NamespaceSystem || (Available(&p) && p.DeletionTimestamp == nil)
	})
	section("Pods not Running and Ready", dumpLines(pods.Items, describePod))
	var events corev1.EventList
	if err := cl.List(ctx, &events); err != nil {
		fmt.Fprintf(&b, "listing Events: %v\n", err)
	}
	events.Items = slices.DeleteFunc(events.Items, func(e corev1.Event) bool {
		return e.Type != corev1.EventTypeWarning && e.Source.Component != "karpenter" && e.ReportingController != "karpenter"
	})
	slices.SortStableFunc(events.Items, func(a, b corev1.Event) int { return lastSeen(&a).Compare(lastSeen(&b)) })
	section("Warning events and karp's", dumpLines(events.Items, describeEvent))
	t.Logf("cluster state at the failure:\n%s", b.String())
}

func dumpLines[T any](items []T, describe func(*T) string) []string {
	out := make([]string, 0, len(items))
	for i := range items {
		out = append(out, describe(&items[i]))
	}
	return out
}

func describeNodeClaim(nc *karpv1.NodeClaim) string {
	var trueConds []string
	for _, c := range nc.Status.Conditions {
		if c.Status == metav1.ConditionTrue {
			trueConds = append(trueConds, c.Type)
		} else {
			trueConds = append(trueConds, fmt.Sprintf("%s=%s(%s)", c.Type, c.Status, c.Reason))
		}
	}
	return fmt.Sprintf("%s pool=%s node=%s age=%s%s conditions=[%s]", nc.Name, nc.Labels[karpv1.NodePoolLabelKey],
		nc.Status.NodeName, age(nc.CreationTimestamp), deleting(nc.DeletionTimestamp), strings.Join(trueConds, " "))
}

func describeNode(n *corev1.Node) string {
	ready := "Unknown"
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = string(c.Status)
		}
	}
	var taints []string
	for _, tn := range n.Spec.Taints {
		taints = append(taints, tn.Key+":"+string(tn.Effect))
	}
	return fmt.Sprintf("%s pool=%s ready=%s unschedulable=%t age=%s%s taints=[%s]", n.Name, n.Labels[karpv1.NodePoolLabelKey],
		ready, n.Spec.Unschedulable, age(n.CreationTimestamp), deleting(n.DeletionTimestamp), strings.Join(taints, " "))
}

func describePod(p *corev1.Pod) string {
	var conds []string
	for _, c := range p.Status.Conditions {
		s := fmt.Sprintf("%s=%s", c.Type, c.Status)
		if c.Reason != "" {
			s += "(" + c.Reason + ")"
		}
		conds = append(conds, s)
	}
	return fmt.Sprintf("%s/%s phase=%s node=%q nominated=%q age=%s%s conditions=[%s]", p.Namespace, p.Name, p.Status.Phase,
		p.Spec.NodeName, p.Status.NominatedNodeName, age(p.CreationTimestamp), deleting(p.DeletionTimestamp), strings.Join(conds, " "))
}

func describeEvent(e *corev1.Event) string {
	return fmt.Sprintf("%s %s %s/%s %s x%d: %s", lastSeen(e).UTC().Format("15:04:05"), e.Reason, e.InvolvedObject.Kind,
		e.InvolvedObject.Name, e.Type, max(e.Count, 1), e.Message)
}

// lastSeen is when an event last happened, whichever API wrote it.
func lastSeen(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

func age(created metav1.Time) string {
	return time.Since(created.Time).Round(time.Second).String()
}

func deleting(ts *metav1.Time) string {
	if ts == nil {
		return ""
	}
	return " deleting-for=" + time.Since(ts.Time).Round(time.Second).String()
}
