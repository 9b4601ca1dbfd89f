package chaos

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// clusterState is one read of what the settle checks look at.
type clusterState struct {
	pods   []corev1.Pod
	nodes  []corev1.Node
	claims []karpv1.NodeClaim
}

func readState(ctx context.Context, cl client.Client) (*clusterState, error) {
	var pods corev1.PodList
	var nodes corev1.NodeList
	var claims karpv1.NodeClaimList
	if err := cl.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	if err := cl.List(ctx, &nodes); err != nil {
		return nil, err
	}
	if err := cl.List(ctx, &claims); err != nil {
		return nil, err
	}
	return &clusterState{pods: pods.Items, nodes: nodes.Items, claims: claims.Items}, nil
}

// without is the state without the pool's NodeClaims and Nodes and the
// pods kept to it (by their karpenter.sh/nodepool node selector).
func (s *clusterState) without(pool string) *clusterState {
	out := &clusterState{}
	for _, p := range s.pods {
		if p.Spec.NodeSelector[karpv1.NodePoolLabelKey] != pool {
			out.pods = append(out.pods, p)
		}
	}
	for _, n := range s.nodes {
		if n.Labels[karpv1.NodePoolLabelKey] != pool {
			out.nodes = append(out.nodes, n)
		}
	}
	for _, nc := range s.claims {
		if nc.Labels[karpv1.NodePoolLabelKey] != pool {
			out.claims = append(out.claims, nc)
		}
	}
	return out
}

// unsettled lists why the cluster is not settled yet, empty once it is:
// every pod of the workload Running and Ready (wantPods of them, the
// DaemonSet's aside), the kwok instances matched one-to-one with live
// NodeClaims, no karp taint left on a node, and no node of a NodeClaim
// without a pod that needs it.
func (s *clusterState) unsettled(wantPods int) []string {
	var out []string
	workload, notRunning := 0, []string{}
	needed := map[string]bool{}
	nodes := map[string]bool{}
	for _, n := range s.nodes {
		nodes[n.Name] = true
	}
	for i := range s.pods {
		p := &s.pods[i]
		daemon := ownedBy(p, "DaemonSet")
		if !daemon {
			workload++
		}
		if target := daemonTarget(p); daemon && target != "" && !nodes[target] {
			// kube-controller-manager's DaemonSet controller has no
			// handler for deleted Nodes: a pod it made for a node that
			// has since gone stays Pending until the DaemonSet's next
			// sync removes it. It cannot run anywhere.
			continue
		}
		if !framework.Available(p) {
			notRunning = append(notRunning, p.Name)
			continue
		}
		if !daemon {
			needed[p.Spec.NodeName] = true
		}
	}
	if workload != wantPods {
		out = append(out, fmt.Sprintf("%d workload pods, want %d", workload, wantPods))
	}
	if len(notRunning) > 0 {
		out = append(out, fmt.Sprintf("%d pods not Running and Ready (%s; %s)", len(notRunning), s.podBreakdown(notRunning), sample(notRunning)))
	}
	out = append(out, s.instanceMismatches()...)
	byNode := map[string]*karpv1.NodeClaim{}
	for i := range s.claims {
		byNode[s.claims[i].Status.NodeName] = &s.claims[i]
	}
	for i := range s.nodes {
		n := &s.nodes[i]
		for _, taint := range n.Spec.Taints {
			if taint.Key == karpv1.DisruptedTaintKey || taint.Key == karpv1.BatchHoldTaintKey {
				out = append(out, fmt.Sprintf("node %s keeps taint %s", n.Name, taint.Key))
			}
		}
		if nc := byNode[n.Name]; nc != nil && !needed[n.Name] {
			out = append(out, fmt.Sprintf("node %s (NodeClaim %s) runs no workload pod%s", n.Name, nc.Name, nodeNote(n)))
		}
	}
	return out
}

// instanceMismatches matches the kwok instances (Nodes with a kwok
// providerID, as the kwok provider's List sees them) with NodeClaims: an
// instance no NodeClaim names is leaked, one two NodeClaims name is a
// duplicate, and a NodeClaim being deleted or whose instance is gone is
// not settled.
func (s *clusterState) instanceMismatches() []string {
	var out []string
	owners := map[string][]string{}
	for _, nc := range s.claims {
		if nc.DeletionTimestamp != nil {
			out = append(out, fmt.Sprintf("NodeClaim %s is being deleted", nc.Name))
		}
		if nc.Status.ProviderID == "" {
			out = append(out, fmt.Sprintf("NodeClaim %s has no instance yet", nc.Name))
			continue
		}
		owners[nc.Status.ProviderID] = append(owners[nc.Status.ProviderID], nc.Name)
	}
	instances := map[string]bool{}
	for _, n := range s.nodes {
		if !strings.HasPrefix(n.Spec.ProviderID, kwok.ProviderIDPrefix) {
			continue
		}
		instances[n.Spec.ProviderID] = true
		switch o := owners[n.Spec.ProviderID]; {
		case len(o) == 0:
			out = append(out, fmt.Sprintf("instance %s is leaked: no NodeClaim names it", n.Spec.ProviderID))
		case len(o) > 1:
			out = append(out, fmt.Sprintf("instance %s is claimed by %d NodeClaims %v", n.Spec.ProviderID, len(o), o))
		}
	}
	for id, o := range owners {
		if !instances[id] {
			out = append(out, fmt.Sprintf("NodeClaims %v name instance %s, which is gone", o, id))
		}
	}
	sort.Strings(out)
	return out
}

// daemonTarget is the node a DaemonSet pod is made for: the
// metadata.name its required node affinity names ("" when none).
func daemonTarget(p *corev1.Pod) string {
	if p.Spec.Affinity == nil || p.Spec.Affinity.NodeAffinity == nil || p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

func ownedBy(p *corev1.Pod, kind string) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == kind {
			return true
		}
	}
	return false
}

// sample is the first few names of a list.
// podBreakdown counts the named pods by app and by whether the scheduler
// has bound them, so a settle that never comes says whether the pods wait
// for a node or for kwok.
func (s *clusterState) podBreakdown(names []string) string {
	named := map[string]bool{}
	for _, n := range names {
		named[n] = true
	}
	apps := map[string]int{}
	bound := 0
	for i := range s.pods {
		p := &s.pods[i]
		if !named[p.Name] {
			continue
		}
		apps[p.Labels["app"]]++
		if p.Spec.NodeName != "" {
			bound++
		}
	}
	keys := make([]string, 0, len(apps))
	for k := range apps {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys)+1)
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, apps[k]))
	}
	return fmt.Sprintf("%d bound; %s", bound, strings.Join(parts, " "))
}

// nodeNote is what may keep pods off a node: not Ready, or its taints.
func nodeNote(n *corev1.Node) string {
	var notes []string
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		notes = append(notes, "not Ready")
	}
	for _, t := range n.Spec.Taints {
		notes = append(notes, "taint "+t.Key)
	}
	if len(notes) == 0 {
		return ""
	}
	return " (" + strings.Join(notes, ", ") + ")"
}

func sample(names []string) string {
	sort.Strings(names)
	if len(names) > 5 {
		return strings.Join(names[:5], ", ") + ", ..."
	}
	return strings.Join(names, ", ")
}
