package provisioning_test

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/localcluster"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// Timeouts for waits on the cluster.
const (
	scaleTimeout   = 3 * time.Minute
	cleanupTimeout = 3 * time.Minute
)

// applyExamples server-side applies files from examples/.
func applyExamples(t *testing.T, names ...string) {
	t.Helper()
	paths := make([]string, 0, len(names))
	for _, n := range names {
		paths = append(paths, fixtures.Example(t, n))
	}
	if err := localcluster.Apply(t.Context(), framework.Current(t).Config, paths, io.Discard); err != nil {
		t.Fatal(err)
	}
}

// deployment is a Deployment of pause pods labelled app=name.
func deployment(name string, replicas int32, cpu, memory string, nodeSelector map[string]string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector:                  nodeSelector,
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}}}},
				},
			},
		},
	}
}

// create creates objects and deletes them (and waits for the nodes of
// the NodePools among them to go) when the test ends.
func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	cl := framework.Current(t).Client
	for _, o := range objs {
		if err := cl.Create(t.Context(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	t.Cleanup(func() { deleteAndWait(t, objs...) })
}

// deleteAndWait deletes objects and waits until they are gone and no
// NodeClaim or Node of a deleted NodePool is left.
func deleteAndWait(t *testing.T, objs ...client.Object) {
	t.Helper()
	cl := framework.Current(t).Client
	ctx := context.Background()
	var pools []string
	for _, o := range objs {
		if _, ok := o.(*karpv1.NodePool); ok {
			pools = append(pools, o.GetName())
		}
		err := cl.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s: %v", o.GetName(), err)
		}
	}
	framework.Eventually(t, cleanupTimeout, func(context.Context) (bool, string) {
		for _, o := range objs {
			err := cl.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object))
			if !apierrors.IsNotFound(err) {
				return false, fmt.Sprintf("%s still exists (%v)", o.GetName(), err)
			}
		}
		for _, pool := range pools {
			claims, nodes := nodeClaimsOf(t, pool), nodesOf(t, pool)
			if len(claims) > 0 || len(nodes) > 0 {
				return false, fmt.Sprintf("NodePool %s: %d NodeClaims and %d Nodes left", pool, len(claims), len(nodes))
			}
		}
		return true, ""
	})
}

// nodesOf lists the Nodes of a NodePool.
func nodesOf(t testing.TB, pool string) []corev1.Node {
	t.Helper()
	var list corev1.NodeList
	if err := framework.Current(t).Client.List(context.Background(), &list, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// nodeClaimsOf lists the NodeClaims of a NodePool.
func nodeClaimsOf(t testing.TB, pool string) []karpv1.NodeClaim {
	t.Helper()
	var list karpv1.NodeClaimList
	if err := framework.Current(t).Client.List(context.Background(), &list, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// podsOf lists the pods labelled app=name.
func podsOf(t testing.TB, namespace, app string) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	if err := framework.Current(t).Client.List(context.Background(), &list, client.InNamespace(namespace), client.MatchingLabels{"app": app}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// waitRunning waits until want pods labelled app=name run.
func waitRunning(t *testing.T, namespace, app string, want int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	framework.Eventually(t, scaleTimeout, func(context.Context) (bool, string) {
		pods = podsOf(t, namespace, app)
		running := 0
		for i := range pods {
			if framework.PodRunning(&pods[i]) && pods[i].DeletionTimestamp == nil {
				running++
			}
		}
		return running == want && len(pods) == want, fmt.Sprintf("%s: %d of %d pods running (%d exist)", app, running, want, len(pods))
	})
	return pods
}

// nodeByName fetches a Node.
func nodeByName(t testing.TB, name string) *corev1.Node {
	t.Helper()
	node := &corev1.Node{}
	if err := framework.Current(t).Client.Get(context.Background(), client.ObjectKey{Name: name}, node); err != nil {
		t.Fatal(err)
	}
	return node
}

// expectOneToOne checks every karp Node has exactly one NodeClaim with its
// providerID and every NodeClaim's providerID names exactly one Node: no
// duplicate launch and no leaked instance.
func expectOneToOne(t *testing.T) {
	t.Helper()
	cl := framework.Current(t).Client
	var nodes corev1.NodeList
	var claims karpv1.NodeClaimList
	if err := cl.List(t.Context(), &nodes, client.HasLabels{karpv1.NodePoolLabelKey}); err != nil {
		t.Fatal(err)
	}
	if err := cl.List(t.Context(), &claims); err != nil {
		t.Fatal(err)
	}
	nodesByID, claimsByID := map[string][]string{}, map[string][]string{}
	for _, n := range nodes.Items {
		nodesByID[n.Spec.ProviderID] = append(nodesByID[n.Spec.ProviderID], n.Name)
	}
	for _, c := range claims.Items {
		claimsByID[c.Status.ProviderID] = append(claimsByID[c.Status.ProviderID], c.Name)
	}
	var problems []string
	for id, names := range nodesByID {
		if len(names) != 1 || len(claimsByID[id]) != 1 {
			problems = append(problems, fmt.Sprintf("providerID %q: Nodes %v, NodeClaims %v", id, names, claimsByID[id]))
		}
	}
	for id, names := range claimsByID {
		if len(nodesByID[id]) == 0 {
			problems = append(problems, fmt.Sprintf("providerID %q: NodeClaims %v without a Node", id, names))
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		t.Errorf("Nodes and NodeClaims are not one to one:\n%s", strings.Join(problems, "\n"))
	}
}

// podEventMessages returns the messages of events about pods labelled
// app=name with the given reason.
func podEventMessages(t *testing.T, app, reason string) []string {
	t.Helper()
	var events corev1.EventList
	if err := framework.Current(t).Client.List(t.Context(), &events, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range events.Items {
		if e.Reason == reason && e.InvolvedObject.Kind == "Pod" && strings.HasPrefix(e.InvolvedObject.Name, app+"-") {
			out = append(out, e.Message)
		}
	}
	return out
}
