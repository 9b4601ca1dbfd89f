package invariants

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok"
)

// InstanceLister lists the provider's instances, each as a NodeClaim
// carrying its providerID and the name of the NodeClaim it was launched
// for, as cloudprovider.CloudProvider's List does. KWOKInstances is one
// for the kwok provider.
type InstanceLister interface {
	List(ctx context.Context) ([]*karpv1.NodeClaim, error)
}

// SettleOptions scope CheckSettled.
type SettleOptions struct {
	// Namespaces whose pods must all be Running; every namespace when empty.
	Namespaces []string
	// Clock stamps the violations; the real clock when nil.
	Clock clock.PassiveClock
}

// CheckSettled checks the promises that hold once a cluster has settled:
//
//   - the provider's instances and the NodeClaims match one to one: no
//     instance without a NodeClaim (leaked), no NodeClaim with two
//     instances, no instance claimed by two NodeClaims, no launched
//     NodeClaim whose instance is gone;
//   - every NodeClaim is initialized and none is terminating;
//   - no empty node (only DaemonSet, mirror or finished pods) is left in a
//     NodePool whose consolidation removes empty nodes;
//   - no karp taint is left behind: karp.sh/batch-hold on any node, or
//     karpenter.sh/disrupted on a node whose NodeClaim is neither deleting
//     nor held by a disruption (DisruptionReason);
//   - every pod (in opts.Namespaces) is Running, Ready and not terminating
//     (or has Succeeded). A DaemonSet's Pending pod made for a Node that no
//     longer exists is not counted: its controller deletes it.
//
// It returns the violations found, sorted by kind and object; an error
// reading the cluster is returned as such.
func CheckSettled(ctx context.Context, cl client.Client, instances InstanceLister, opts SettleOptions) ([]Violation, error) {
	var clk clock.PassiveClock = clock.RealClock{}
	if opts.Clock != nil {
		clk = opts.Clock
	}
	var (
		claims karpv1.NodeClaimList
		pools  karpv1.NodePoolList
		nodes  corev1.NodeList
		pods   corev1.PodList
	)
	for _, list := range []client.ObjectList{&claims, &pools, &nodes, &pods} {
		if err := cl.List(ctx, list); err != nil {
			return nil, fmt.Errorf("listing %T: %w", list, err)
		}
	}
	listed, err := instances.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing instances: %w", err)
	}
	s := &settleCheck{now: clk.Now()}
	s.instances(listed, claims.Items)
	s.nodeClaims(claims.Items, pools.Items, nodes.Items, pods.Items)
	s.taints(nodes.Items, claims.Items)
	s.pods(pods.Items, nodes.Items, opts.Namespaces)
	slices.SortStableFunc(s.found, func(a, b Violation) int {
		if c := strings.Compare(string(a.Kind), string(b.Kind)); c != 0 {
			return c
		}
		return strings.Compare(a.Object, b.Object)
	})
	return s.found, nil
}

// WaitSettled polls CheckSettled every interval until it finds nothing or
// timeout passes, and returns the last violations found. Errors reading
// the cluster are retried; the last one is returned if no check ever
// completed.
func WaitSettled(ctx context.Context, cl client.Client, instances InstanceLister, opts SettleOptions, interval, timeout time.Duration) ([]Violation, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		last    []Violation
		lastErr error
		checked bool
	)
	for {
		found, err := CheckSettled(ctx, cl, instances, opts)
		if err == nil {
			last, checked, lastErr = found, true, nil
			if len(found) == 0 {
				return nil, nil
			}
		} else if ctx.Err() == nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if !checked {
				return nil, fmt.Errorf("no settle check completed in %s: %w", timeout, lastErr)
			}
			return last, nil
		case <-time.After(interval):
		}
	}
}

type settleCheck struct {
	now   time.Time
	found []Violation
}

func (s *settleCheck) add(kind Kind, object, node, format string, args ...any) {
	s.found = append(s.found, Violation{Kind: kind, Object: object, Node: node, At: s.now, Message: fmt.Sprintf(format, args...)})
}

// instances matches instances with NodeClaims by providerID and by the
// NodeClaim they were launched for.
func (s *settleCheck) instances(listed []*karpv1.NodeClaim, claims []karpv1.NodeClaim) {
	byProvider := map[string][]string{}
	for _, nc := range claims {
		if nc.Status.ProviderID != "" {
			byProvider[nc.Status.ProviderID] = append(byProvider[nc.Status.ProviderID], nc.Name)
		}
	}
	seen := map[string]bool{}
	perClaim := map[string][]string{}
	for _, inst := range listed {
		id := inst.Status.ProviderID
		seen[id] = true
		perClaim[inst.Name] = append(perClaim[inst.Name], id)
		owners := byProvider[id]
		switch {
		case len(owners) == 0:
			s.add(KindLeakedInstance, id, "", "instance launched for %q (created %s) has no NodeClaim",
				inst.Name, inst.CreationTimestamp.UTC().Format(time.RFC3339))
		case len(owners) > 1:
			s.add(KindSharedInstance, id, "", "instance is claimed by NodeClaims %s", strings.Join(owners, ", "))
		}
	}
	for name, ids := range perClaim {
		if len(ids) > 1 {
			slices.Sort(ids)
			s.add(KindDuplicateInstance, name, "", "NodeClaim %s has %d instances: %s", name, len(ids), strings.Join(ids, ", "))
		}
	}
	for _, nc := range claims {
		if nc.Status.ProviderID != "" && !seen[nc.Status.ProviderID] && nc.DeletionTimestamp == nil {
			s.add(KindMissingInstance, nc.Name, nc.Status.NodeName, "the provider has no instance %s", nc.Status.ProviderID)
		}
	}
}

// nodeClaims finds NodeClaims that are not settled and empty nodes.
func (s *settleCheck) nodeClaims(claims []karpv1.NodeClaim, pools []karpv1.NodePool, nodes []corev1.Node, pods []corev1.Pod) {
	consolidates := map[string]bool{}
	for _, np := range pools {
		consolidates[np.Name] = !np.Spec.Disruption.ConsolidateAfter.IsNever()
	}
	workload := map[string]int{}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName != "" && !terminal(p) && !daemonOrMirror(p) {
			workload[p.Spec.NodeName]++
		}
	}
	nodeByName := map[string]*corev1.Node{}
	for i := range nodes {
		nodeByName[nodes[i].Name] = &nodes[i]
	}
	for _, nc := range claims {
		switch {
		case nc.DeletionTimestamp != nil:
			s.add(KindNodeClaimNotSettled, nc.Name, nc.Status.NodeName, "terminating since %s", nc.DeletionTimestamp.UTC().Format(time.RFC3339))
			continue
		case !nc.StatusConditions().IsTrue(karpv1.ConditionTypeInitialized):
			s.add(KindNodeClaimNotSettled, nc.Name, nc.Status.NodeName, "not initialized (providerID %q, node %q)", nc.Status.ProviderID, nc.Status.NodeName)
			continue
		}
		node := nodeByName[nc.Status.NodeName]
		if node == nil || workload[node.Name] > 0 || !consolidates[nc.Labels[karpv1.NodePoolLabelKey]] {
			continue
		}
		if nc.Annotations[karpv1.DoNotDisruptAnnotationKey] == "true" || node.Annotations[karpv1.DoNotDisruptAnnotationKey] == "true" {
			continue
		}
		s.add(KindEmptyNode, nc.Name, node.Name, "node has no workload pods and NodePool %s consolidates", nc.Labels[karpv1.NodePoolLabelKey])
	}
}

// taints finds karp taints left on nodes nothing is disrupting.
func (s *settleCheck) taints(nodes []corev1.Node, claims []karpv1.NodeClaim) {
	claimOf := map[string]*karpv1.NodeClaim{}
	for i := range claims {
		if claims[i].Status.NodeName != "" {
			claimOf[claims[i].Status.NodeName] = &claims[i]
		}
	}
	for _, node := range nodes {
		nc := claimOf[node.Name]
		if slices.ContainsFunc(node.Spec.Taints, karpv1.IsBatchHoldTaint) {
			s.add(KindStuckTaint, node.Name, node.Name, "%s taint on a settled node", karpv1.BatchHoldTaintKey)
		}
		if !slices.ContainsFunc(node.Spec.Taints, karpv1.IsDisruptingTaint) || node.DeletionTimestamp != nil {
			continue
		}
		if nc != nil && (nc.DeletionTimestamp != nil || nc.StatusConditions().IsTrue(karpv1.ConditionTypeDisruptionReason)) {
			continue
		}
		s.add(KindStuckTaint, node.Name, node.Name, "%s taint while no disruption of the node is in progress", karpv1.DisruptedTaintKey)
	}
}

// pods finds pods that are not Running and Ready.
func (s *settleCheck) pods(pods []corev1.Pod, nodes []corev1.Node, namespaces []string) {
	live := map[string]bool{}
	for _, n := range nodes {
		live[n.Name] = true
	}
	for i := range pods {
		p := &pods[i]
		if len(namespaces) > 0 && !slices.Contains(namespaces, p.Namespace) {
			continue
		}
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			// A finished pod kept its promise.
		case p.Status.Phase == corev1.PodPending && daemonPodForGoneNode(p, live):
			// The DaemonSet controller deletes it on its next sync: not
			// a pod anything could run.
		case p.DeletionTimestamp != nil:
			s.add(KindPodNotRunning, podKey(p), p.Spec.NodeName, "terminating since %s", p.DeletionTimestamp.UTC().Format(time.RFC3339))
		case p.Status.Phase != corev1.PodRunning:
			s.add(KindPodNotRunning, podKey(p), p.Spec.NodeName, "phase %s%s", p.Status.Phase, unschedulable(p))
		case !healthy(p):
			s.add(KindPodNotRunning, podKey(p), p.Spec.NodeName, "Running but not Ready")
		}
	}
}

// daemonPodForGoneNode reports whether the pod is a DaemonSet's pod made
// for one node (required node affinity on metadata.name, as the DaemonSet
// controller writes it) that no longer exists.
func daemonPodForGoneNode(p *corev1.Pod, live map[string]bool) bool {
	if !ownedByDaemonSet(p) || p.Spec.Affinity == nil || p.Spec.Affinity.NodeAffinity == nil {
		return false
	}
	required := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if required == nil {
		return false
	}
	for _, term := range required.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 && !live[f.Values[0]] {
				return true
			}
		}
	}
	return false
}

// unschedulable is the scheduler's reason, when it gave one.
func unschedulable(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return ": " + c.Message
		}
	}
	return ""
}

// daemonOrMirror reports whether consolidation ignores the pod when
// deciding a node is empty.
func daemonOrMirror(p *corev1.Pod) bool {
	if _, mirror := p.Annotations[mirrorAnnotationKey]; mirror {
		return true
	}
	return ownedByDaemonSet(p)
}

func ownedByDaemonSet(p *corev1.Pod) bool {
	owner := metav1.GetControllerOf(p)
	return owner != nil && owner.Kind == "DaemonSet"
}

// KWOKInstances lists the kwok provider's instances read-only: every Node
// with a kwok:// providerID that is not being deleted, as the provider's
// own List reports them (its name is the NodeClaim's). Unlike a second
// provider's List it never resumes a launch. Launches still waiting out a
// registration delay are not listed.
type KWOKInstances struct{ Client client.Client }

// List implements InstanceLister.
func (k KWOKInstances) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	var nodes corev1.NodeList
	if err := k.Client.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	var out []*karpv1.NodeClaim
	for _, n := range nodes.Items {
		if !strings.HasPrefix(n.Spec.ProviderID, kwok.ProviderIDPrefix) || n.DeletionTimestamp != nil {
			continue
		}
		nc := &karpv1.NodeClaim{}
		nc.Name = n.Name
		nc.CreationTimestamp = n.CreationTimestamp
		nc.Status.ProviderID = n.Spec.ProviderID
		out = append(out, nc)
	}
	return out, nil
}
