package migration

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

const (
	// name names the namespace, KWOKNodeClass and NodePool, as the hash
	// golden case "migration e2e pool" references them.
	name      = "e2e-migration"
	nodeCount = 3
	// instance is a 4-vCPU type; each replica asks for 3 CPUs, so every
	// node is needed and consolidation has nothing to do.
	instance   = "c5.xlarge"
	replicaCPU = "3"
	// disruptionPasses is how many passes of karp's disruption loop
	// nothing may change over after karp starts.
	disruptionPasses = 20
)

// TestTakeOverFromUpstreamKarpenter creates a NodePool and three
// initialized NodeClaims and Nodes exactly as upstream Karpenter leaves
// them, with a workload that needs every node, starts karp and watches
// over twenty disruption passes: no NodeClaim is drifted, tainted,
// replaced or deleted, the hash annotations stay upstream's, and the
// NodePool's status and usage metric count the three nodes.
func TestTakeOverFromUpstreamKarpenter(t *testing.T) {
	f := framework.Current(t)
	cl := f.Client
	ctx := t.Context()

	// 1. The pool as upstream stamped it: its template hashed by upstream.
	tmpl, upstreamHash, hashVersion := upstreamCase(t, "migration e2e pool")
	pool := test.MakeNodePool(name).
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized).
		ConsolidateAfter(karpv1.NewNillableDuration(0)).
		Budgets(karpv1.Budget{Nodes: "100%"}).Obj()
	pool.Spec.Template = tmpl
	pool.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{instance}},
		{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
	}
	pool.Annotations = map[string]string{karpv1.NodePoolHashAnnotationKey: upstreamHash, karpv1.NodePoolHashVersionAnnotationKey: hashVersion}
	framework.CreatePool(t, cl, name, pool)

	// 2. Three initialized nodes, as upstream's kwok provider launched them.
	launch := instanceType(t, instance)
	created := time.Now().Add(-time.Hour)
	var claims []string
	for i := range nodeCount {
		nc, status, node := upstreamNodeClaim(fmt.Sprintf("%s-%c%c%c%c%c", name, 'a'+i, 'x', 'k', '7', 'q'), pool, launch, created)
		framework.Create(t, cl, nc)
		nc.Status = status
		if err := cl.Status().Update(ctx, nc); err != nil {
			t.Fatalf("writing nodeclaim status: %v", err)
		}
		framework.Create(t, cl, node)
		claims = append(claims, nc.Name)
	}

	// 3. A workload that needs every node, placed by the kube-scheduler.
	workload := framework.SpreadOverHosts(framework.Deployment("web", name, name, nodeCount, replicaCPU))
	framework.Create(t, cl, workload)
	framework.Eventually(t, 2*time.Minute, func(ctx context.Context) (bool, string) {
		n := len(framework.AvailablePods(ctx, cl, name, map[string]string{"app": "web"}))
		return n == nodeCount, fmt.Sprintf("%d of %d replicas available", n, nodeCount)
	})

	before := snapshot(t, cl, claims)

	// 4. karp takes over, with disruption acting within seconds.
	port := freePort(t)
	k := framework.StartKarp(t, f, append([]string{fmt.Sprintf("--metrics-port=%d", port)}, framework.FastDisruptionArgs...)...)
	t.Cleanup(func() { framework.DeletePool(cl, name) })

	// 5. Over karp's first disruption passes nothing changes. Drift and
	// hashes are settled at start, consolidation acts one validation delay
	// (1s) after a pass finds a move, so a change would show within a few
	// passes of a 1s poll; twenty are waited for.
	checks := k.HoldsFor(t, framework.Passes{"disruption": disruptionPasses}, 3*time.Minute, func(ctx context.Context) string {
		if diff := snapshot(t, cl, claims).differences(before); diff != "" {
			return diff + "\n" + framework.Describe(ctx, cl, name)
		}
		return ""
	})
	t.Logf("%d checks over %d disruption passes: nothing drifted, tainted, replaced or deleted", checks, disruptionPasses)

	// 6. The NodePool's status and usage metric count the three nodes.
	pool = &karpv1.NodePool{}
	if err := cl.Get(ctx, client.ObjectKey{Name: name}, pool); err != nil {
		t.Fatal(err)
	}
	wantCPU := launch.InstanceType.Capacity.Cpu().DeepCopy()
	wantCPU.Mul(nodeCount)
	if pool.Status.Nodes == nil || *pool.Status.Nodes != nodeCount {
		t.Errorf("NodePool status.nodes = %v, want %d", pool.Status.Nodes, nodeCount)
	}
	if q := pool.Status.Resources[corev1.ResourceCPU]; q.Cmp(wantCPU) != 0 {
		t.Errorf("NodePool status.resources.cpu = %s, want %s", q.String(), wantCPU.String())
	}
	if !pool.StatusConditions().IsTrue(karpv1.ConditionTypeReady) {
		t.Errorf("NodePool not Ready: %+v", pool.Status.Conditions)
	}
	series := fmt.Sprintf(`karpenter_nodepools_usage{nodepool=%q,resource_type="cpu"} `, name)
	got, found := 0.0, false
	for _, line := range strings.Split(scrape(t, port), "\n") {
		if v, ok := strings.CutPrefix(line, series); ok {
			got, found = mustFloat(t, v), true
		}
	}
	if want := wantCPU.AsApproximateFloat64(); !found || math.Abs(got-want) > 1e-6 {
		t.Errorf("%s= %v (found %v), want %v", series, got, found, want)
	}
}

// state is what must not change: the NodeClaims and their hashes, drift,
// deletion and the disrupted taint on their Nodes, and the pool's hash.
type state struct {
	poolHash    map[string]string
	claims      map[string]string // name -> UID
	annotations map[string]map[string]string
	problems    []string
}

func snapshot(t *testing.T, cl client.Client, names []string) state {
	t.Helper()
	ctx := t.Context()
	s := state{claims: map[string]string{}, annotations: map[string]map[string]string{}}
	pool := &karpv1.NodePool{}
	if err := cl.Get(ctx, client.ObjectKey{Name: name}, pool); err != nil {
		t.Fatal(err)
	}
	s.poolHash = map[string]string{
		karpv1.NodePoolHashAnnotationKey:        pool.Annotations[karpv1.NodePoolHashAnnotationKey],
		karpv1.NodePoolHashVersionAnnotationKey: pool.Annotations[karpv1.NodePoolHashVersionAnnotationKey],
	}
	for _, nc := range framework.PoolNodeClaims(ctx, cl, name) {
		s.claims[nc.Name] = string(nc.UID)
		s.annotations[nc.Name] = map[string]string{
			karpv1.NodePoolHashAnnotationKey:        nc.Annotations[karpv1.NodePoolHashAnnotationKey],
			karpv1.NodePoolHashVersionAnnotationKey: nc.Annotations[karpv1.NodePoolHashVersionAnnotationKey],
		}
		if !nc.DeletionTimestamp.IsZero() {
			s.problems = append(s.problems, "nodeclaim "+nc.Name+" is being deleted")
		}
		if c := nc.StatusConditions().Get(karpv1.ConditionTypeDrifted); c != nil && c.Status == "True" {
			s.problems = append(s.problems, fmt.Sprintf("nodeclaim %s is Drifted (%s: %s)", nc.Name, c.Reason, c.Message))
		}
	}
	for _, n := range names {
		node := &corev1.Node{}
		if err := cl.Get(ctx, client.ObjectKey{Name: n}, node); err != nil {
			s.problems = append(s.problems, fmt.Sprintf("node %s: %v", n, err))
			continue
		}
		if framework.HasDisruptedTaint(node) {
			s.problems = append(s.problems, "node "+n+" has the disrupted taint")
		}
		if !node.DeletionTimestamp.IsZero() {
			s.problems = append(s.problems, "node "+n+" is being deleted")
		}
	}
	return s
}

// differences says what changed from before, or "".
func (s state) differences(before state) string {
	var out []string
	out = append(out, s.problems...)
	if !equality.Semantic.DeepEqual(s.claims, before.claims) {
		out = append(out, fmt.Sprintf("nodeclaims changed: %v, were %v", s.claims, before.claims))
	}
	if !equality.Semantic.DeepEqual(s.annotations, before.annotations) {
		out = append(out, fmt.Sprintf("nodeclaim hash annotations changed: %v, were %v", s.annotations, before.annotations))
	}
	if !equality.Semantic.DeepEqual(s.poolHash, before.poolHash) {
		out = append(out, fmt.Sprintf("nodepool hash annotations changed: %v, were %v", s.poolHash, before.poolHash))
	}
	return strings.Join(out, "; ")
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		t.Fatalf("parsing metric value %q: %v", s, err)
	}
	return v
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func scrape(t *testing.T, port int) string {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port)) //nolint:gosec,noctx // test-local URL
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}
