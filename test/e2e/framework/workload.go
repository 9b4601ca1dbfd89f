package framework

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// Deployment is a Deployment of pause pods labelled app=name, each
// requesting cpu and 256Mi, kept to the NodePool pool, deleted at once
// (no termination grace period).
func Deployment(name, namespace, pool string, replicas int32, cpu string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector:                  map[string]string{karpv1.NodePoolLabelKey: pool},
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: test.ResourceList("cpu", cpu, "memory", "256Mi")}}},
				},
			},
		},
	}
}

// SpreadOverHosts puts each pod of the Deployment on its own node
// (required pod anti-affinity on the hostname).
func SpreadOverHosts(d *appsv1.Deployment) *appsv1.Deployment {
	d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname,
			LabelSelector: &metav1.LabelSelector{MatchLabels: d.Spec.Selector.MatchLabels}}}}}
	return d
}

// Available reports whether the pod is Running and Ready and not being
// deleted.
func Available(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// CountAvailable counts the Available pods.
func CountAvailable(pods []corev1.Pod) int {
	n := 0
	for i := range pods {
		if Available(&pods[i]) {
			n++
		}
	}
	return n
}

// AvailablePods lists the namespace's Available pods carrying labels (all
// pods when labels is nil); nil when the list fails.
func AvailablePods(ctx context.Context, cl client.Client, namespace string, labels map[string]string) []corev1.Pod {
	var list corev1.PodList
	if err := cl.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels(labels)); err != nil {
		return nil
	}
	var out []corev1.Pod
	for i := range list.Items {
		if Available(&list.Items[i]) {
			out = append(out, list.Items[i])
		}
	}
	return out
}

// PendingPods counts the namespace's unbound pods that are not being
// deleted; -1 when the list fails.
func PendingPods(ctx context.Context, cl client.Client, namespace string) int {
	var list corev1.PodList
	if err := cl.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return -1
	}
	n := 0
	for _, p := range list.Items {
		if p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// PoolNodeClaims lists the NodePool's NodeClaims; nil when the list fails.
func PoolNodeClaims(ctx context.Context, cl client.Client, pool string) []karpv1.NodeClaim {
	var list karpv1.NodeClaimList
	if err := cl.List(ctx, &list, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}); err != nil {
		return nil
	}
	return list.Items
}

// NodeClaimOfNode returns the NodeClaim whose status names the node,
// waiting up to a minute for one: the kube-scheduler may bind a pod to a
// node as soon as its startup taint is gone, a moment before the
// NodeClaim's status write that names the node lands.
func NodeClaimOfNode(t testing.TB, cl client.Client, nodeName string) *karpv1.NodeClaim {
	t.Helper()
	var found *karpv1.NodeClaim
	Eventually(t, time.Minute, func(ctx context.Context) (bool, string) {
		var list karpv1.NodeClaimList
		if err := cl.List(ctx, &list); err != nil {
			return false, err.Error()
		}
		for i := range list.Items {
			if list.Items[i].Status.NodeName == nodeName {
				found = &list.Items[i]
				return true, ""
			}
		}
		return false, fmt.Sprintf("no nodeclaim names node %s among %d", nodeName, len(list.Items))
	})
	return found
}

// HasDisruptedTaint reports whether the node carries karpenter.sh/disrupted.
func HasDisruptedTaint(node *corev1.Node) bool {
	for _, taint := range node.Spec.Taints {
		if taint.Key == karpv1.DisruptedTaintKey {
			return true
		}
	}
	return false
}

// Events lists the events (events.k8s.io) in namespace ("" for every
// namespace) about objects of kind, of the named one when name is not "".
func Events(t testing.TB, cl client.Client, namespace, kind, name string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := cl.List(t.Context(), &list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == kind && (name == "" || e.Regarding.Name == name) {
			out = append(out, e)
		}
	}
	return out
}

// EventReasons are the reasons of Events(namespace, kind, name).
func EventReasons(t testing.TB, cl client.Client, namespace, kind, name string) []string {
	t.Helper()
	var out []string
	for _, e := range Events(t, cl, namespace, kind, name) {
		out = append(out, e.Reason)
	}
	return out
}

// Describe summarises the namespace's pods and the cluster's nodes for
// failure messages.
func Describe(ctx context.Context, cl client.Client, namespace string) string {
	var b strings.Builder
	var pods corev1.PodList
	if err := cl.List(ctx, &pods, client.InNamespace(namespace)); err == nil {
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "pod %s node=%q phase=%s deleting=%v conditions=", p.Name, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil)
			for _, c := range p.Status.Conditions {
				fmt.Fprintf(&b, "%s=%s(%s) ", c.Type, c.Status, c.Message)
			}
			b.WriteString("; ")
		}
	}
	var nodes corev1.NodeList
	if err := cl.List(ctx, &nodes); err == nil {
		for _, n := range nodes.Items {
			fmt.Fprintf(&b, "node %s deleting=%v taints=%v ready=", n.Name, n.DeletionTimestamp != nil, n.Spec.Taints)
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					b.WriteString(string(c.Status))
				}
			}
			b.WriteString("; ")
		}
	}
	return b.String()
}

// PoolNodeClaimsByName lists the pool's NodeClaims by name.
func PoolNodeClaimsByName(ctx context.Context, cl client.Client, pool string) map[string]karpv1.NodeClaim {
	out := map[string]karpv1.NodeClaim{}
	for _, nc := range PoolNodeClaims(ctx, cl, pool) {
		out[nc.Name] = nc
	}
	return out
}

// WaitRunningClaims waits up to three minutes until replicas pods of the
// namespace are available and returns the names of the NodeClaims under
// them, of the NodePool named like the namespace.
func WaitRunningClaims(t *testing.T, cl client.Client, namespace string, replicas int) map[string]bool {
	t.Helper()
	Eventually(t, 3*time.Minute, func(ctx context.Context) (bool, string) {
		n := len(AvailablePods(ctx, cl, namespace, nil))
		return n == replicas, fmt.Sprintf("%d of %d pods running", n, replicas)
	})
	nodes := map[string]bool{}
	for _, p := range AvailablePods(t.Context(), cl, namespace, nil) {
		nodes[p.Spec.NodeName] = true
	}
	claims := map[string]bool{}
	for name, nc := range PoolNodeClaimsByName(t.Context(), cl, namespace) {
		if nodes[nc.Status.NodeName] {
			claims[name] = true
		}
	}
	return claims
}

// PoolCost sums the offering price ($/hour) of the pool's NodeClaims, each
// priced at its instance type, zone and capacity type in its; it returns
// the sum and the number of NodeClaims.
func PoolCost(ctx context.Context, cl client.Client, pool string, its []*scheduling.InstanceType) (float64, int) {
	byName := map[string]*scheduling.InstanceType{}
	for _, it := range its {
		byName[it.Name] = it
	}
	total := 0.0
	claims := PoolNodeClaims(ctx, cl, pool)
	for _, nc := range claims {
		it := byName[nc.Labels[corev1.LabelInstanceTypeStable]]
		if it == nil {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == nc.Labels[corev1.LabelTopologyZone] && o.CapacityType == nc.Labels[karpv1.CapacityTypeLabelKey] {
				total += o.Price
				break
			}
		}
	}
	return total, len(claims)
}
