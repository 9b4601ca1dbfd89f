package signals

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/node/health"
	"github.com/karp-autoscaler/karp/pkg/localcluster"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// repairToleration replaces kwok's 10-minute repair toleration.
const repairToleration = 10 * time.Second

// TestRepairReplacesUnhealthyNodesAFifthOfThePoolAtATime runs five pods on
// five nodes with node repair on. One node made unhealthy (kwok keeps it
// Ready=False) is replaced once the toleration has passed: a new node
// comes, the old NodeClaim, Node and instance go, and its pod runs on the
// new node. Three of the five made unhealthy at once are more than 20% of
// the pool: none is repaired and NodeRepairBlocked says why. Once two of
// them recover, the third is repaired. A watch on the pool's NodeClaims
// never sees more than one being deleted at a time.
func TestRepairReplacesUnhealthyNodesAFifthOfThePoolAtATime(t *testing.T) {
	const name = "e2e-repair"
	pool := test.MakeNodePool(name).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		// Only repair removes nodes.
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmpty).
		ConsolidateAfter(karpv1.MustParseNillableDuration(karpv1.Never)).
		Obj()
	f, _ := framework.RunPool(t, name, pool, "--feature-gates=NodeRepair=true",
		"--node-repair-toleration="+repairToleration.String())
	cl := f.Client
	start := time.Now()
	phase := func(what string) { t.Logf("%s after %s", what, time.Since(start).Round(time.Second)) }
	framework.Create(t, cl, framework.SpreadOverHosts(framework.Deployment(name, name, name, 5, "500m")))
	nodes := repairWaitFiveNodes(t, cl, name, nil)
	sampler := framework.WatchDisrupting(t, f, name, nil)
	phase("five pods on five nodes")

	// One unhealthy node of five (20%) is replaced.
	sick := nodes[0]
	sickClaim := framework.NodeClaimOfNode(t, cl, sick)
	framework.SetKWOKNodeReady(t, cl, sick, false)
	repairWaitNotReady(t, cl, sick)
	phase("one node not ready")
	repairWaitReplaced(t, cl, name, sick, sickClaim)
	phase("it was replaced")
	if reasons := framework.EventReasons(t, cl, "", "Node", sick); !slices.Contains(reasons, health.ReasonNodeRepair) {
		t.Errorf("node %s was replaced without a %s event (events %v)", sick, health.ReasonNodeRepair, reasons)
	}
	nodes = repairWaitFiveNodes(t, cl, name, []string{sick})

	// Three of five (60%) are unhealthy: repair is blocked.
	sickNodes := nodes[:3]
	sickClaims := map[string]*karpv1.NodeClaim{}
	for _, n := range sickNodes {
		sickClaims[n] = framework.NodeClaimOfNode(t, cl, n)
		framework.SetKWOKNodeReady(t, cl, n, false)
	}
	for _, n := range sickNodes {
		repairWaitNotReady(t, cl, n)
	}
	var blocked string
	framework.Eventually(t, repairToleration+time.Minute, func(ctx context.Context) (bool, string) {
		for _, n := range sickNodes {
			for _, e := range framework.Events(t, cl, "", "Node", n) {
				if e.Reason == health.ReasonNodeRepairBlocked {
					blocked = e.Note
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("no %s event on %v", health.ReasonNodeRepairBlocked, sickNodes)
	})
	phase("three not ready, repair blocked")
	t.Logf("%s: %s", health.ReasonNodeRepairBlocked, blocked)
	if !strings.Contains(blocked, "3 of 5 nodes are unhealthy") {
		t.Errorf("%s event says %q, want it to say 3 of 5 nodes are unhealthy", health.ReasonNodeRepairBlocked, blocked)
	}
	// Past the toleration, none of the three has been touched.
	repairHold(t, repairToleration+5*time.Second, func(ctx context.Context) string {
		for n, nc := range sickClaims {
			got := &karpv1.NodeClaim{}
			if err := cl.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil || got.DeletionTimestamp != nil {
				return fmt.Sprintf("node %s's nodeclaim was deleted while 3 of 5 nodes were unhealthy (err %v)", n, err)
			}
		}
		return ""
	})

	// Two recover: one of five is unhealthy again and is repaired.
	for _, n := range sickNodes[:2] {
		framework.SetKWOKNodeReady(t, cl, n, true)
	}
	last := sickNodes[2]
	repairWaitReplaced(t, cl, name, last, sickClaims[last])
	phase("two recovered, the third was replaced")
	for _, n := range sickNodes[:2] {
		got := &karpv1.NodeClaim{}
		if err := cl.Get(t.Context(), client.ObjectKeyFromObject(sickClaims[n]), got); err != nil || got.DeletionTimestamp != nil {
			t.Errorf("recovered node %s's nodeclaim was deleted (err %v)", n, err)
		}
		framework.Eventually(t, time.Minute, func(ctx context.Context) (bool, string) {
			node := &corev1.Node{}
			if err := cl.Get(ctx, types.NamespacedName{Name: n}, node); err != nil {
				return false, err.Error()
			}
			return framework.ReadyStatus(node) == corev1.ConditionTrue, fmt.Sprintf("recovered node %s Ready=%s", n, framework.ReadyStatus(node))
		})
	}

	peak, seen := sampler.Stop()
	if err := sampler.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d NodeClaims repaired, at most %d at once", seen, peak)
	if peak != 1 || seen != 2 {
		t.Errorf("%d NodeClaims were deleted, at most %d at once; want 2, one at a time", seen, peak)
	}
}

// repairWaitFiveNodes waits until the app's five pods run on five nodes
// of the pool, none of them in gone, and returns the nodes, sorted.
func repairWaitFiveNodes(t *testing.T, cl client.Client, name string, gone []string) []string {
	t.Helper()
	var nodes []string
	framework.Eventually(t, 3*time.Minute, func(ctx context.Context) (bool, string) {
		nodes = nodes[:0]
		for _, p := range framework.AvailablePods(ctx, cl, name, map[string]string{"app": name}) {
			if !slices.Contains(nodes, p.Spec.NodeName) {
				nodes = append(nodes, p.Spec.NodeName)
			}
		}
		stale := slices.ContainsFunc(nodes, func(n string) bool { return slices.Contains(gone, n) })
		return len(nodes) == 5 && !stale, fmt.Sprintf("pods available on %d nodes %v (want 5, none of %v); %s",
			len(nodes), nodes, gone, framework.Describe(ctx, cl, name))
	})
	slices.Sort(nodes)
	return nodes
}

// repairWaitNotReady waits until kwok reports the node Ready=False for
// the karp.sh/kwok-ready annotation.
func repairWaitNotReady(t *testing.T, cl client.Client, nodeName string) {
	t.Helper()
	framework.Eventually(t, time.Minute, func(ctx context.Context) (bool, string) {
		node := &corev1.Node{}
		if err := cl.Get(ctx, types.NamespacedName{Name: nodeName}, node); err != nil {
			return false, err.Error()
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionFalse && c.Reason == localcluster.KWOKNotReadyReason,
					fmt.Sprintf("node %s Ready=%s reason %q", nodeName, c.Status, c.Reason)
			}
		}
		return false, "node " + nodeName + " has no Ready condition"
	})
}

// repairWaitReplaced waits until the unhealthy node's NodeClaim and Node
// are gone, the pool has five NodeClaims again and the app's five pods are
// Running elsewhere; the node must stay not Ready until it goes (kwok must
// not heal it). Pods count by phase, not readiness: the pods of the other
// unhealthy nodes may be marked not ready for a while by the node
// lifecycle controller.
func repairWaitReplaced(t *testing.T, cl client.Client, pool, nodeName string, nodeClaim *karpv1.NodeClaim) {
	t.Helper()
	framework.Eventually(t, repairToleration+2*time.Minute, func(ctx context.Context) (bool, string) {
		node := &corev1.Node{}
		err := cl.Get(ctx, types.NamespacedName{Name: nodeName}, node)
		if err == nil && framework.ReadyStatus(node) == corev1.ConditionTrue {
			t.Fatalf("node %s became Ready again before it was repaired", nodeName)
		}
		nodeGone := apierrors.IsNotFound(err)
		claimGone := apierrors.IsNotFound(cl.Get(ctx, client.ObjectKeyFromObject(nodeClaim), &karpv1.NodeClaim{}))
		claims := framework.PoolNodeClaims(ctx, cl, pool)
		running := repairRunningElsewhere(ctx, cl, pool, nodeName)
		return nodeGone && claimGone && len(claims) == 5 && running == 5,
			fmt.Sprintf("node %s gone %v, nodeclaim %s gone %v, %d nodeclaims in the pool, %d of 5 pods running elsewhere; %s",
				nodeName, nodeGone, nodeClaim.Name, claimGone, len(claims), running, framework.Describe(ctx, cl, pool))
	})
}

// repairRunningElsewhere counts the app's pods that are bound to a node
// other than nodeName, Running and not being deleted.
func repairRunningElsewhere(ctx context.Context, cl client.Client, name, nodeName string) int {
	var list corev1.PodList
	if err := cl.List(ctx, &list, client.InNamespace(name), client.MatchingLabels{"app": name}); err != nil {
		return -1
	}
	n := 0
	for _, p := range list.Items {
		if p.Spec.NodeName != "" && p.Spec.NodeName != nodeName && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			n++
		}
	}
	return n
}

// repairHold polls check for d and fails the test at the first problem
// it reports.
func repairHold(t *testing.T, d time.Duration, check func(ctx context.Context) string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if problem := check(t.Context()); problem != "" {
			t.Fatal(problem)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
