package disruption

import (
	"context"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// ReasonDaemonSetReplacement is the event on a node, and on the DaemonSet
// pod that does not fit it, when karp replaces the node so the pod fits.
const ReasonDaemonSetReplacement = "DaemonSetReplacement"

// BlockedDaemonSet: a DaemonSet pod does not fit the node, but no
// replacement that fits it and the node's pods was found.
const BlockedDaemonSet = "DaemonSetDoesNotFit"

// DaemonSetFit replaces nodes a DaemonSet pod cannot fit for lack of
// resources (a DaemonSet added, or its requests raised, after the node
// filled up) with capacity that fits the node's pods plus every DaemonSet
// that targets it, so users need no PriorityClass workaround (upstream
// issue 731). Like drift it replaces at any price, one node per pass,
// without a validation delay; its commands count against the Drifted
// budgets: the node no longer matches what its DaemonSets need.
type DaemonSetFit struct {
	kubeClient client.Client
	daemonSets daemonSetLister
	events     *recorder

	// pass and starved cache the starved DaemonSet pods of one pass.
	pass    *world
	starved map[string][]*corev1.Pod
}

// daemonSetLister is where DaemonSetFit finds the cluster's DaemonSets
// (the cluster state).
type daemonSetLister interface {
	DaemonSets() []*appsv1.DaemonSet
}

// Name is "daemonset".
func (d *DaemonSetFit) Name() string { return "daemonset" }

// ConsolidationType is "": the replacement is not consolidation.
func (d *DaemonSetFit) ConsolidationType() string { return "" }

// Reason is Drifted (for budgets).
func (d *DaemonSetFit) Reason() karpv1.DisruptionReason { return karpv1.DisruptionReasonDrifted }

// NeedsValidation is false: the pod keeps waiting until the node goes.
func (d *DaemonSetFit) NeedsValidation() bool { return false }

// ShouldDisrupt keeps candidates a DaemonSet pod is waiting for.
func (d *DaemonSetFit) ShouldDisrupt(ctx context.Context, w *world, c *Candidate) (bool, blocker) {
	return len(d.starvedPods(ctx, w)[c.Name()]) > 0, blocker{}
}

// ComputeCommand returns the first candidate within budget whose pods fit
// on the other nodes or on replacements sized for its DaemonSets.
func (d *DaemonSetFit) ComputeCommand(ctx context.Context, w *world, sim Simulator, budgets Budgets, candidates ...*Candidate) (Command, error) {
	starved := d.starvedPods(ctx, w)
	for _, c := range w.withinBudget(budgets, d.Reason(), candidates) {
		if isStatic(c) {
			// The template's NodeClaim is sized for the DaemonSets too.
			cmd, whyNot := staticCommand(w, sim, d, d.Reason(), c)
			if whyNot != "" {
				w.block(c.Name(), BlockedDaemonSet, "a DaemonSet pod does not fit, but the node cannot be replaced: %s", whyNot)
				continue
			}
			d.announce(c, starved[c.Name()], cmd)
			return cmd, nil
		}
		// The solver sizes new NodeClaims for every DaemonSet that lands on
		// them, with the DaemonSets' current requests.
		res, err := sim.Simulate(ctx, simulation.ConsolidationOptions{SpotToSpot: true}, c)
		if err != nil {
			return Command{}, err
		}
		pods := starved[c.Name()]
		if res.Decision == simulation.ConsolidationNone {
			w.block(c.Name(), BlockedDaemonSet, "DaemonSet pod %s/%s does not fit, but the node cannot be replaced: %s",
				pods[0].Namespace, pods[0].Name, res.Reason)
			continue
		}
		cmd := Command{Candidates: []*Candidate{c}, Replacements: res.Replacements, Reason: d.Reason(),
			Method: d, Savings: res.Savings}
		d.announce(c, pods, cmd)
		return cmd, nil
	}
	return Command{}, nil
}

// announce tells the node and each waiting DaemonSet pod why the node goes.
func (d *DaemonSetFit) announce(c *Candidate, pods []*corev1.Pod, cmd Command) {
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	how := "deleting it (its pods fit on other nodes)"
	if n := len(cmd.Replacements); n > 0 {
		how = fmt.Sprintf("replacing it with %d node(s) that fit its pods and DaemonSets", n)
	}
	node := c.StateNode.Node
	d.events.publish(node, string(node.UID), string(node.UID), corev1.EventTypeNormal, ReasonDaemonSetReplacement,
		fmt.Sprintf("DaemonSet pod(s) %s do not fit this node; %s", strings.Join(names, ", "), how))
	for _, p := range pods {
		d.events.publish(p, string(node.UID), string(p.UID), corev1.EventTypeNormal, ReasonDaemonSetReplacement,
			fmt.Sprintf("Pod does not fit node %s for lack of resources; karp is %s", c.Name(), how))
	}
}

// starvedPods lists the pods of the cluster's DaemonSets once per pass.
func (d *DaemonSetFit) starvedPods(ctx context.Context, w *world) map[string][]*corev1.Pod {
	if d.pass != nil && d.pass == w {
		return d.starved
	}
	d.pass, d.starved = w, map[string][]*corev1.Pod{}
	var pods []*corev1.Pod
	for _, ds := range d.daemonSets.DaemonSets() {
		pods = append(pods, d.podsOf(ctx, ds)...)
	}
	d.starved = StarvedDaemonPods(pods)
	return d.starved
}

func (d *DaemonSetFit) podsOf(ctx context.Context, ds *appsv1.DaemonSet) []*corev1.Pod {
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil || sel.Empty() {
		return nil
	}
	var list corev1.PodList
	if err := d.kubeClient.List(ctx, &list, client.InNamespace(ds.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil
	}
	out := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out
}

// StarvedDaemonPods returns, by node name, the DaemonSet pods the
// kube-scheduler could not place on the one node they target for lack of
// resources: pending, not terminating, owned by a DaemonSet, pinned to a
// node by a required metadata.name node affinity, and marked
// PodScheduled=False/Unschedulable with an "Insufficient <resource>" or
// "Too many pods" message. Pods that fail for other reasons (taints,
// ports, selectors) are not starved: a bigger node would not help.
func StarvedDaemonPods(pods []*corev1.Pod) map[string][]*corev1.Pod {
	out := map[string][]*corev1.Pod{}
	for _, pod := range pods {
		if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || !state.IsOwnedBy(pod, "DaemonSet") {
			continue
		}
		node := targetNode(pod)
		if node == "" || !lacksResources(pod) {
			continue
		}
		out[node] = append(out[node], pod)
	}
	for _, list := range out {
		sort.Slice(list, func(i, j int) bool { return list[i].Namespace+"/"+list[i].Name < list[j].Namespace+"/"+list[j].Name })
	}
	return out
}

// targetNode is the single node a DaemonSet pod's required node affinity
// names through metadata.name (how the DaemonSet controller pins its pods).
func targetNode(pod *corev1.Pod) string {
	aff := pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// lacksResources reports whether the scheduler's verdict on the pod is a
// resource shortfall.
func lacksResources(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.PodScheduled {
			continue
		}
		return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable &&
			(strings.Contains(c.Message, "Insufficient ") || strings.Contains(c.Message, "Too many pods"))
	}
	return false
}
