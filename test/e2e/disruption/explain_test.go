package disruption

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/explain"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// karpJSON runs a karp CLI command against the test cluster with -o json
// and decodes its output into out.
func karpJSON(t *testing.T, f *framework.Framework, out any, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), framework.KarpBinary(t), append(args, "--kubeconfig", f.Cluster.Kubeconfig, "-o", "json")...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("karp %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("karp %s: decoding %q: %v", strings.Join(args, " "), raw, err)
	}
}

// extraPool creates another NodePool on the test's KWOKNodeClass, deleted
// (with its nodes) when the test ends.
func extraPool(t *testing.T, cl client.Client, class string, pool *karpv1.NodePool) {
	t.Helper()
	pool.Spec.Template.Spec.NodeClassRef = kwokv1alpha1.NodeClassReference(class)
	framework.Create(t, cl, pool)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = cl.Delete(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool.Name}})
		_ = cl.DeleteAllOf(ctx, &karpv1.NodeClaim{}, client.MatchingLabels{karpv1.NodePoolLabelKey: pool.Name})
	})
}

// reasonFor is the reason the pod report gives for the NodePool.
func reasonFor(r *explain.PodReport, pool string) (scheduling.Reason, bool) {
	for _, why := range r.Reasons {
		if why.NodePool == pool {
			return why, true
		}
	}
	return scheduling.Reason{}, false
}

// TestExplainPendingPods sets up pods pending for four reasons (a taint
// not tolerated, a NodePool limit, requests larger than every instance
// type, a zone nothing offers) and checks that `karp explain pod` gives
// each its reason code and numbers, the same code karp's FailedScheduling
// event carries, and that a running pod is explained as bound.
func TestExplainPendingPods(t *testing.T) {
	const name = "e2e-explain-pods"
	const tainted, limited = name + "-taint", name + "-limit"
	f, _ := framework.RunPool(t, name, test.MakeNodePool(name).Obj())
	cl := f.Client
	extraPool(t, cl, name, test.MakeNodePool(tainted).
		Taint(corev1.Taint{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}).Obj())
	extraPool(t, cl, name, test.MakeNodePool(limited).Limits(test.ResourceList("cpu", "1")).Obj())

	// The pods go in once every NodePool is Ready: before that karp
	// skips a NodePool as not Ready, which is a different (and correct)
	// reason than the one each pod is here to show.
	framework.Eventually(t, 2*time.Minute, func(ctx context.Context) (bool, string) {
		for _, pool := range []string{name, tainted, limited} {
			var np karpv1.NodePool
			if err := cl.Get(ctx, client.ObjectKey{Name: pool}, &np); err != nil {
				return false, err.Error()
			}
			if !np.StatusConditions().IsTrue(karpv1.ConditionTypeReady) {
				return false, "NodePool " + pool + " not Ready yet"
			}
		}
		return true, ""
	})
	onPool := func(pod, pool, cpu string) *corev1.Pod {
		return test.MakePod(pod).Namespace(name).Requests("cpu", cpu).
			NodeSelector(map[string]string{karpv1.NodePoolLabelKey: pool}).Obj()
	}
	framework.Create(t, cl, onPool("p-taint", tainted, "100m"))
	framework.Create(t, cl, onPool("p-limit", limited, "2"))
	framework.Create(t, cl, onPool("p-huge", name, "5000"))
	framework.Create(t, cl, test.MakePod("p-zone").Namespace(name).Requests("cpu", "100m").
		NodeSelector(map[string]string{corev1.LabelTopologyZone: "mars-1a"}).Obj())
	framework.Create(t, cl, onPool("p-runs", name, "100m"))

	want := map[string]struct {
		pool    string
		code    scheduling.ReasonCode
		numbers []string
	}{
		"p-taint": {tainted, scheduling.ReasonTaintNotTolerated, []string{"dedicated=ml:NoSchedule"}},
		"p-limit": {limited, scheduling.ReasonNodePoolLimit, []string{"limit cpu=1", "(0 in use)"}},
		"p-huge":  {name, scheduling.ReasonInstanceTypesTooSmall, []string{"5000 cpu", "the largest allocatable is"}},
		"p-zone":  {name, scheduling.ReasonNoInstanceTypeOffered, []string{"mars-1a"}},
	}
	// karp has decided about every pod once its FailedScheduling events
	// are out.
	framework.Eventually(t, 2*time.Minute, func(ctx context.Context) (bool, string) {
		for pod := range want {
			if failedScheduling(ctx, cl, name, pod) == "" {
				return false, "no FailedScheduling event from karp yet for " + pod
			}
		}
		return true, ""
	})
	for pod, w := range want {
		var r explain.PodReport
		karpJSON(t, f, &r, "explain", "pod", name+"/"+pod)
		if r.Decision != explain.DecisionUnschedulable {
			t.Errorf("%s: decision %s (%s), want %s", pod, r.Decision, r.Message, explain.DecisionUnschedulable)
			continue
		}
		why, ok := reasonFor(&r, w.pool)
		if !ok || why.Code != w.code {
			t.Errorf("%s: NodePool %s reason %+v, want code %s; all reasons %+v", pod, w.pool, why, w.code, r.Reasons)
			continue
		}
		for _, n := range w.numbers {
			if !strings.Contains(why.Message, n) {
				t.Errorf("%s: reason %q does not say %q", pod, why.Message, n)
			}
		}
	}
	// The event and explain agree: karp's latest FailedScheduling event
	// names the same code for the NodePool (an event is published again
	// whenever its message changes).
	framework.Eventually(t, time.Minute, func(ctx context.Context) (bool, string) {
		for pod, w := range want {
			event := scheduling.ParseReasons(failedScheduling(ctx, cl, name, pod))
			i := slices.IndexFunc(event, func(r scheduling.Reason) bool { return r.NodePool == w.pool })
			if i < 0 || event[i].Code != w.code {
				return false, fmt.Sprintf("%s: FailedScheduling reasons %+v, explain says %s for NodePool %s", pod, event, w.code, w.pool)
			}
		}
		return true, ""
	})
	framework.Eventually(t, 2*time.Minute, func(context.Context) (bool, string) {
		var r explain.PodReport
		karpJSON(t, f, &r, "explain", "pod", name+"/p-runs")
		return r.Decision == explain.DecisionBound && r.Node != "", fmt.Sprintf("p-runs: %s %s", r.Decision, r.Message)
	})
	// The limited NodePool says what its limit keeps pending.
	var np explain.NodePoolReport
	karpJSON(t, f, &np, "explain", "nodepool", limited)
	if !slices.Contains(np.Blocked, name+"/p-limit") || len(np.Limits) != 1 || np.Limits[0].Limit.String() != "1" {
		t.Errorf("nodepool %s: limits %+v, blocked %v; want cpu limit 1 blocking p-limit", limited, np.Limits, np.Blocked)
	}
}

// failedScheduling is the message of karp's latest FailedScheduling event
// on the pod, or "".
func failedScheduling(ctx context.Context, cl client.Client, namespace, pod string) string {
	var events corev1.EventList
	if err := cl.List(ctx, &events, client.InNamespace(namespace)); err != nil {
		return ""
	}
	msg, latest := "", time.Time{}
	for _, e := range events.Items {
		if e.InvolvedObject.Name == pod && e.Reason == "FailedScheduling" && strings.Contains(e.ReportingController+e.Source.Component, "karp") {
			at := e.EventTime.Time
			if e.Series != nil {
				at = e.Series.LastObservedTime.Time
			}
			if e.LastTimestamp.After(at) {
				at = e.LastTimestamp.Time
			}
			if msg == "" || !at.Before(latest) {
				msg, latest = e.Message, at
			}
		}
	}
	return msg
}

// TestExplainNodes keeps five nodes for five reasons (a PDB allowing no
// disruption, a do-not-disrupt pod, a budget of 0 in a schedule window,
// consolidateAfter, no cheaper placement) and drifts a sixth, and checks
// `karp explain node`: each reason code with its numbers, the same code as
// the NodeClaim's DisruptionBlocked condition.
func TestExplainNodes(t *testing.T) {
	const name = "e2e-explain-nodes"
	now := time.Now().UTC()
	pools := map[string]*karpv1.NodePool{
		"pdb":    test.MakeNodePool(name + "-pdb").Obj(),
		"dnd":    test.MakeNodePool(name + "-dnd").Obj(),
		"budget": test.MakeNodePool(name + "-budget").Obj(),
		"after":  test.MakeNodePool(name + "-after").Obj(),
		"cheap":  test.MakeNodePool(name + "-cheap").Obj(),
	}
	for _, p := range pools {
		p.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized
		p.Spec.Disruption.ConsolidateAfter = karpv1.NewNillableDuration(0)
		p.Spec.Template.Spec.Requirements = append(p.Spec.Template.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
			Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}})
	}
	pools["after"].Spec.Disruption.ConsolidateAfter = karpv1.NewNillableDuration(time.Hour)
	// A window of budget 0 that opened this hour and closes two hours
	// after it opened.
	pools["budget"].Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0",
		Schedule: ptr.To(fmt.Sprintf("0 %d * * *", now.Hour())), Duration: &metav1.Duration{Duration: 2 * time.Hour}}}
	windowEnds := now.Truncate(time.Hour).Add(2 * time.Hour)

	// The drifted pool is the test's own, with its own KWOKNodeClass.
	drift := test.MakeNodePool(name).Budgets(karpv1.Budget{Nodes: "100%"}).Obj()
	f, _ := framework.RunPool(t, name, drift, framework.FastDisruptionArgs...)
	cl, ctx := f.Client, t.Context()
	// The other pools have a KWOKNodeClass of their own, which the drift
	// does not change.
	others := name + "-others"
	framework.Create(t, cl, test.MakeKWOKNodeClass(others).Obj())
	t.Cleanup(func() {
		_ = cl.Delete(context.Background(), &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: others}})
	})
	for _, p := range pools {
		extraPool(t, cl, others, p)
	}
	for key, p := range pools {
		d := framework.Deployment(key, name, p.Name, 1, "100m")
		switch key {
		case "dnd":
			d.Spec.Template.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
		case "pdb":
			framework.Create(t, cl, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "pdb", Namespace: name},
				Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0)),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": key}}}})
		}
		framework.Create(t, cl, d)
	}
	framework.Create(t, cl, framework.Deployment("drift", name, name, 1, "100m"))
	framework.WaitRunningClaims(t, cl, name, len(pools)+1)
	// The budget pool's node is emptied: emptiness would delete it but
	// for the budget.
	scaleTo(t, cl, name, "budget", 0)

	nodeOf := func(pool string) string {
		for _, nc := range framework.PoolNodeClaims(ctx, cl, pool) {
			if nc.Status.NodeName != "" && nc.DeletionTimestamp == nil {
				return nc.Status.NodeName
			}
		}
		t.Fatalf("NodePool %s has no node", pool)
		return ""
	}
	want := map[string]struct {
		code  string
		check func(r *explain.NodeReport) string
	}{
		"pdb": {disruption.BlockedPDB, func(r *explain.NodeReport) string {
			if len(r.PDBs) != 1 || r.PDBs[0].DisruptionsAllowed != 0 {
				return fmt.Sprintf("PDBs %+v, want one allowing 0", r.PDBs)
			}
			return ""
		}},
		"dnd": {disruption.BlockedDoNotDisrupt, func(r *explain.NodeReport) string {
			if len(r.DoNotDisrupt) != 1 {
				return fmt.Sprintf("do-not-disrupt pods %+v, want one", r.DoNotDisrupt)
			}
			return ""
		}},
		"budget": {disruption.BlockedBudget, func(r *explain.NodeReport) string {
			i := slices.IndexFunc(r.Budgets, func(b explain.BudgetSummary) bool { return b.Reason == karpv1.DisruptionReasonEmpty })
			if i < 0 || r.Budgets[i].Allowed != 0 || r.Budgets[i].NextChange == nil || !r.Budgets[i].NextChange.Time.Equal(windowEnds) {
				return fmt.Sprintf("budgets %+v, want Empty allowing 0 until %s", r.Budgets, windowEnds)
			}
			if !r.Empty {
				return fmt.Sprintf("pods %v, want the node empty", r.Pods)
			}
			return ""
		}},
		"after": {disruption.BlockedConsolidateAfter, func(r *explain.NodeReport) string {
			left, err := time.ParseDuration(r.ConsolidateAfterLeft)
			if err != nil || left < 50*time.Minute || left > time.Hour {
				return fmt.Sprintf("consolidateAfter left %q, want between 50m and 1h", r.ConsolidateAfterLeft)
			}
			return ""
		}},
		"cheap": {disruption.BlockedNoCheaper, func(r *explain.NodeReport) string {
			if r.PricePerHour <= 0 || !strings.Contains(r.Blocked.Message, fmt.Sprintf("$%.4f/h", r.PricePerHour)) {
				return fmt.Sprintf("message %q does not name the node's price %v", r.Blocked.Message, r.PricePerHour)
			}
			return ""
		}},
	}
	for key, w := range want {
		pool := pools[key].Name
		node := nodeOf(pool)
		framework.Eventually(t, 2*time.Minute, func(ctx context.Context) (bool, string) {
			var r explain.NodeReport
			karpJSON(t, f, &r, "explain", "node", node)
			if r.Status != explain.StatusBlocked || r.Blocked == nil || r.Blocked.Reason != w.code {
				return false, fmt.Sprintf("%s: %s %s, want blocked by %s", key, r.Status, r.Message, w.code)
			}
			if msg := w.check(&r); msg != "" {
				return false, key + ": " + msg
			}
			// The controller's condition says the same.
			nc := framework.PoolNodeClaimsByName(ctx, cl, pool)[r.NodeClaim]
			cond := nc.StatusConditions().Get(disruption.ConditionTypeDisruptionBlocked)
			if cond == nil || cond.Reason != r.Blocked.Reason {
				return false, fmt.Sprintf("%s: explain says %s, the NodeClaim's condition %+v", key, r.Blocked.Reason, cond)
			}
			return true, ""
		})
	}

	// Drift: a KWOKNodeClass change drifts the node; its replacement takes
	// two minutes to register, so the node is being drifted meanwhile.
	driftNode := nodeOf(name)
	class := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	framework.Mutate(t, cl, class, func() { class.Spec.NodeRegistrationDelay = &metav1.Duration{Duration: 2 * time.Minute} })
	framework.Eventually(t, 2*time.Minute, func(context.Context) (bool, string) {
		var r explain.NodeReport
		karpJSON(t, f, &r, "explain", "node", driftNode)
		drifting := r.Status == explain.StatusDisrupting || r.Status == explain.StatusWouldDisrupt && r.Next != nil && r.Next.Method == "drift"
		return r.Drifted != nil && drifting, fmt.Sprintf("drift node: %s %s, drifted %+v", r.Status, r.Message, r.Drifted)
	})
}

// scaleTo sets a Deployment's replicas and waits for its pods to go.
func scaleTo(t *testing.T, cl client.Client, namespace, name string, replicas int32) {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	framework.Mutate(t, cl, d, func() { d.Spec.Replicas = ptr.To(replicas) })
	framework.Eventually(t, time.Minute, func(ctx context.Context) (bool, string) {
		var pods corev1.PodList
		if err := cl.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{"app": name}); err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == int(replicas), fmt.Sprintf("%d pods of %s, want %d", len(pods.Items), name, replicas)
	})
}

// TestSimulateDisruptionPredictsScaleDown takes a kubectl dump in the
// middle of a scale-down (six nodes, one pod each, four pods just gone),
// runs `karp simulate --disruption` on it, and checks that the nodes it
// predicts the controller deletes first are the ones the controller then
// deletes, and that --remove sends a pod where anti-affinity allows.
func TestSimulateDisruptionPredictsScaleDown(t *testing.T) {
	const name = "e2e-explain-sim"
	pool := test.MakeNodePool(name).
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized).
		ConsolidateAfter(karpv1.NewNillableDuration(0)).
		Budgets(karpv1.Budget{Nodes: "100%"}).Obj()
	// A long validation delay leaves time to take the dump between the
	// decision and the deletion.
	f, _ := framework.RunPool(t, name, pool, "--disruption-poll-period=1s", "--disruption-validation-delay=30s")
	cl, ctx := f.Client, t.Context()
	framework.Create(t, cl, framework.SpreadOverHosts(framework.Deployment("web", name, name, 6, "100m")))
	framework.WaitRunningClaims(t, cl, name, 6)
	scaleTo(t, cl, name, "web", 2)

	dump := filepath.Join(t.TempDir(), "dump.yaml")
	kubectl := exec.CommandContext(ctx, filepath.Join(f.BinDir, "kubectl"), "--kubeconfig", f.Cluster.Kubeconfig,
		"get", "nodepools,nodeclaims,nodes,pods,pdb,daemonsets", "-A", "-o", "yaml")
	raw, err := kubectl.Output()
	if err != nil {
		t.Fatalf("kubectl get: %v", err)
	}
	if err := os.WriteFile(dump, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	webNodes := map[string]bool{}
	for _, p := range framework.AvailablePods(ctx, cl, name, map[string]string{"app": "web"}) {
		webNodes[p.Spec.NodeName] = true
	}
	var victim, victimPod string
	for _, p := range framework.AvailablePods(ctx, cl, name, map[string]string{"app": "web"}) {
		victim, victimPod = p.Spec.NodeName, name+"/"+p.Name
	}

	simulate := func(args ...string) explain.DisruptionReport {
		cmd := exec.CommandContext(ctx, framework.KarpBinary(t), append([]string{"simulate", "--disruption", "-f", dump, "-o", "json", "--nodepool", name}, args...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("karp simulate --disruption: %v\n%s", err, stderr.String())
		}
		var r explain.DisruptionReport
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("decoding %q: %v", out, err)
		}
		return r
	}
	r := simulate()
	if len(r.Commands) == 0 {
		t.Fatalf("no command predicted; kept %+v", r.Kept)
	}
	predicted := map[string]bool{}
	for _, n := range r.Commands[0].Nodes {
		predicted[n] = true
	}
	if len(predicted) != 4 || r.Commands[0].Decision != "delete" {
		t.Fatalf("first command %+v, want the four empty nodes deleted", r.Commands[0])
	}
	for n := range webNodes {
		if predicted[n] {
			t.Fatalf("predicted deleting %s, which runs a web pod", n)
		}
	}
	removed := simulate("--remove", victim)
	to := removed.Removed.To[victimPod]
	if to == "" || to == victim || webNodes[to] {
		t.Errorf("without %s, %s goes to %q; want a node without a web pod (anti-affinity), or a new one: %+v", victim, victimPod, to, removed.Removed)
	}

	// The controller deletes what was predicted.
	framework.Eventually(t, 2*time.Minute, func(ctx context.Context) (bool, string) {
		left := map[string]bool{}
		for _, nc := range framework.PoolNodeClaims(ctx, cl, name) {
			if nc.DeletionTimestamp == nil {
				left[nc.Status.NodeName] = true
			}
		}
		for n := range predicted {
			if left[n] {
				return false, fmt.Sprintf("%d nodes left, %s (predicted) among them", len(left), n)
			}
		}
		if len(left) != len(webNodes) {
			return false, fmt.Sprintf("%d nodes left, want the %d web nodes", len(left), len(webNodes))
		}
		return true, ""
	})
}
