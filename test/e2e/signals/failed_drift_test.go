package signals

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// TestDriftWhoseReplacementNeverInitializesLeavesTheOldNodeServing drifts
// a one-node pool onto a template whose startup taint nothing removes, so
// the drift's replacement registers but never initializes. With a 20 s
// replacement timeout: once it passes, the old node is untainted and keeps
// serving its pod, says why it is left alone (FailedDisruption), and the
// replacement is kept, not initialized, as upstream keeps it; across more
// than two further timeouts (past the backoff) no other NodeClaim is
// created. When the startup taint finally goes, the drift completes onto
// the kept replacement.
func TestDriftWhoseReplacementNeverInitializesLeavesTheOldNodeServing(t *testing.T) {
	const name = "e2e-drift-stuck"
	const timeout = 20 * time.Second
	never := corev1.Taint{Key: "e2e.karp.sh/never-removed", Effect: corev1.TaintEffectNoSchedule}
	pool := test.MakeNodePool(name).
		Labels(map[string]string{"rollout": "v1"}).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmpty).
		ConsolidateAfter(karpv1.MustParseNillableDuration(karpv1.Never)).
		Obj()
	f, _ := framework.RunPool(t, name, pool, append(slices.Clone(framework.FastDisruptionArgs),
		"--disruption-replacement-timeout="+timeout.String())...)
	cl := f.Client
	framework.Create(t, cl, framework.Deployment(name, name, name, 1, "500m"))
	running := framework.WaitRunningClaims(t, cl, name, 1)
	if len(running) != 1 {
		t.Fatalf("the pod runs under %d NodeClaims, want 1", len(running))
	}
	var old string
	for n := range running {
		old = n
	}
	oldNode := framework.PoolNodeClaimsByName(t.Context(), cl, name)[old].Status.NodeName
	created := watchCreated(t, f, name)

	// 1. Drift onto a template whose startup taint nothing removes.
	current := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	framework.Mutate(t, cl, current, func() {
		current.Spec.Template.ObjectMeta.Labels["rollout"] = "v2"
		current.Spec.Template.Spec.StartupTaints = append(current.Spec.Template.Spec.StartupTaints, never)
	})

	// 2. The replacement registers with the taint; the old node is tainted
	// karpenter.sh/disrupted while the drift waits for it.
	var repl karpv1.NodeClaim
	framework.Eventually(t, 2*time.Minute, func(ctx context.Context) (bool, string) {
		claims := framework.PoolNodeClaimsByName(ctx, cl, name)
		for n, nc := range claims {
			if n != old && nc.StatusConditions().IsTrue(karpv1.ConditionTypeRegistered) {
				repl = nc
			}
		}
		return repl.Name != "" && stuckDisrupted(ctx, cl, oldNode),
			fmt.Sprintf("replacement registered %q, old node tainted %v (NodeClaims %v)", repl.Name, stuckDisrupted(ctx, cl, oldNode), mapKeys(claims))
	})

	// 3. The replacement timeout passes: the old node is untainted and says
	// why it is left alone.
	framework.Eventually(t, timeout+time.Minute, func(ctx context.Context) (bool, string) {
		nc := framework.PoolNodeClaimsByName(ctx, cl, name)[old]
		blocked := nc.StatusConditions().Get(disruption.ConditionTypeDisruptionBlocked)
		why := ""
		if blocked != nil {
			why = blocked.Reason + ": " + blocked.Message
		}
		return !stuckDisrupted(ctx, cl, oldNode) && blocked != nil && blocked.Reason == disruption.BlockedFailedDisruption,
			fmt.Sprintf("old node tainted %v, DisruptionBlocked %q", stuckDisrupted(ctx, cl, oldNode), why)
	})
	if !slices.ContainsFunc(framework.Events(t, cl, "", "Node", oldNode), func(e eventsv1.Event) bool {
		return e.Reason == disruption.ReasonDisruptionBlocked && strings.Contains(e.Note, "failed")
	}) {
		t.Errorf("no %s event on node %s saying its disruption failed; events: %v", disruption.ReasonDisruptionBlocked,
			oldNode, framework.EventReasons(t, cl, "", "Node", oldNode))
	}

	// 4. Over more than two timeouts, past the backoff: the old node keeps
	// serving untainted, the replacement stays (not initialized) and no
	// other replacement is launched.
	deadline := time.Now().Add(2*timeout + 10*time.Second)
	for time.Now().Before(deadline) {
		if msg := stuckCheck(t.Context(), cl, name, old, oldNode, repl.Name); msg != "" {
			t.Fatalf("%s\n%s", msg, framework.Describe(t.Context(), cl, name))
		}
		time.Sleep(time.Second)
	}
	if got := created(); !slices.Equal(got, []string{repl.Name}) {
		t.Fatalf("NodeClaims created since the drift: %v; want only the first replacement %s", got, repl.Name)
	}

	// 5. The startup taint goes at last: the drift completes onto the kept
	// replacement, still without another NodeClaim.
	replNode := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: framework.PoolNodeClaimsByName(t.Context(), cl, name)[repl.Name].Status.NodeName}}
	framework.Mutate(t, cl, replNode, func() {
		replNode.Spec.Taints = slices.DeleteFunc(replNode.Spec.Taints, func(taint corev1.Taint) bool { return taint.Key == never.Key })
	})
	framework.Eventually(t, 2*time.Minute, func(ctx context.Context) (bool, string) {
		claims := framework.PoolNodeClaimsByName(ctx, cl, name)
		_, oldLeft := claims[old]
		pods := framework.AvailablePods(ctx, cl, name, nil)
		onRepl := len(pods) == 1 && pods[0].Spec.NodeName == replNode.Name
		return !oldLeft && onRepl, fmt.Sprintf("old NodeClaim left %v, pod on the replacement %v", oldLeft, onRepl)
	})
	if got := created(); !slices.Equal(got, []string{repl.Name}) {
		t.Errorf("NodeClaims created since the drift: %v; want only the first replacement %s", got, repl.Name)
	}
}

// stuckDisrupted reports whether the node carries karpenter.sh/disrupted.
func stuckDisrupted(ctx context.Context, cl client.Client, nodeName string) bool {
	node := &corev1.Node{}
	if err := cl.Get(ctx, types.NamespacedName{Name: nodeName}, node); err != nil {
		return false
	}
	return framework.HasDisruptedTaint(node)
}

// stuckCheck returns what is wrong while the drift is backed off: the
// pool's NodeClaims must be exactly old and repl, neither deleting, repl
// not initialized, the old node untainted and running the pod.
func stuckCheck(ctx context.Context, cl client.Client, pool, old, oldNode, repl string) string {
	claims := framework.PoolNodeClaimsByName(ctx, cl, pool)
	if len(claims) != 2 {
		return fmt.Sprintf("NodeClaims %v; want only %s and its replacement %s", mapKeys(claims), old, repl)
	}
	for _, n := range []string{old, repl} {
		nc, ok := claims[n]
		if !ok || nc.DeletionTimestamp != nil {
			return fmt.Sprintf("NodeClaim %s gone or deleting", n)
		}
	}
	if nc := claims[repl]; nc.StatusConditions().IsTrue(karpv1.ConditionTypeInitialized) {
		return fmt.Sprintf("replacement %s initialized despite its startup taint", repl)
	}
	if stuckDisrupted(ctx, cl, oldNode) {
		return fmt.Sprintf("old node %s tainted %s again during the backoff", oldNode, karpv1.DisruptedTaintKey)
	}
	pods := framework.AvailablePods(ctx, cl, pool, nil)
	if len(pods) != 1 || pods[0].Spec.NodeName != oldNode {
		return fmt.Sprintf("%d pods available; want the one pod on the old node %s", len(pods), oldNode)
	}
	return ""
}

// watchCreated watches the pool's NodeClaims from now on and returns a
// function listing, sorted, the names of those created since.
func watchCreated(t *testing.T, f *framework.Framework, pool string) func() []string {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]bool{}
	framework.ListAndWatch(t, f, &karpv1.NodeClaimList{}, nil, func(ev watch.Event) {
		if nc, isClaim := ev.Object.(*karpv1.NodeClaim); isClaim && ev.Type == watch.Added {
			mu.Lock()
			seen[nc.Name] = true
			mu.Unlock()
		}
	}, client.MatchingLabels{karpv1.NodePoolLabelKey: pool})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return mapKeys(seen)
	}
}

// mapKeys are the map's keys, sorted.
func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestTwoNodeDriftKeepsOneUninitializedReplacement drifts a two-node pool
// (one pod per node, required hostname anti-affinity, the default 10%
// budget) onto a template whose startup taint nothing removes. The first
// node's replacement never initializes and is kept after the timeout, as
// upstream keeps it. The second node's pod could only move to that kept
// replacement, so no decision may rest on it: no second replacement is
// launched, for as long as the first stays uninitialized, and both old
// nodes keep serving.
func TestTwoNodeDriftKeepsOneUninitializedReplacement(t *testing.T) {
	const name = "e2e-drift-stuck-two"
	const timeout = 20 * time.Second
	never := corev1.Taint{Key: "e2e.karp.sh/never-removed", Effect: corev1.TaintEffectNoSchedule}
	pool := test.MakeNodePool(name).
		Labels(map[string]string{"rollout": "v1"}).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmpty).
		ConsolidateAfter(karpv1.MustParseNillableDuration(karpv1.Never)).
		Obj()
	f, _ := framework.RunPool(t, name, pool, append(slices.Clone(framework.FastDisruptionArgs),
		"--disruption-replacement-timeout="+timeout.String())...)
	cl := f.Client
	framework.Create(t, cl, framework.SpreadOverHosts(framework.Deployment(name, name, name, 2, "500m")))
	running := framework.WaitRunningClaims(t, cl, name, 2)
	if len(running) != 2 {
		t.Fatalf("the pods run under %d NodeClaims, want 2", len(running))
	}
	created := watchCreated(t, f, name)

	current := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	framework.Mutate(t, cl, current, func() {
		current.Spec.Template.ObjectMeta.Labels["rollout"] = "v2"
		current.Spec.Template.Spec.StartupTaints = append(current.Spec.Template.Spec.StartupTaints, never)
	})

	// The first replacement registers (with the taint it never loses).
	framework.Eventually(t, 2*time.Minute, func(ctx context.Context) (bool, string) {
		got := created()
		return len(got) >= 1, fmt.Sprintf("NodeClaims created since the drift: %v", got)
	})
	first := created()[0]

	// Past its timeout, and past more than two further timeouts (the other
	// drifted node's turn comes at once; the first node's backoff ends
	// after two): one replacement, both old nodes serving their pods.
	deadline := time.Now().Add(4*timeout + 10*time.Second)
	for time.Now().Before(deadline) {
		claims := framework.PoolNodeClaimsByName(t.Context(), cl, name)
		if got := created(); len(got) > 1 {
			t.Fatalf("NodeClaims created since the drift: %v; want only the first replacement %s\n%s", got, first,
				framework.Describe(t.Context(), cl, name))
		}
		if nc, ok := claims[first]; ok && nc.StatusConditions().IsTrue(karpv1.ConditionTypeInitialized) {
			t.Fatalf("replacement %s initialized despite its startup taint", first)
		}
		for old := range running {
			if nc, ok := claims[old]; !ok || nc.DeletionTimestamp != nil {
				t.Fatalf("old NodeClaim %s gone or deleting while its replacement cannot initialize", old)
			}
		}
		time.Sleep(time.Second)
	}
	if pods := framework.AvailablePods(t.Context(), cl, name, nil); len(pods) != 2 {
		t.Fatalf("%d pods available; want both, on the old nodes", len(pods))
	}
	if got := created(); !slices.Equal(got, []string{first}) {
		t.Fatalf("NodeClaims created since the drift: %v; want only %s", got, first)
	}
}
