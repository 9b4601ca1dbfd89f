package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

const (
	// podsEnv is how many pods the suite scales to (default 10,000).
	podsEnv = "KARP_SCALE_PODS"
	// pool is the NodePool, its KWOKNodeClass and the workload's namespace.
	pool = "scale"
	// downFraction is the share of each workload kept by the scale-down.
	downFraction = 0.3
	// poll is how often the suite lists the cluster: every 250 ms, as
	// framework.Eventually polls, a 10,000-pod list would load the API
	// server the suite measures.
	poll = 2 * time.Second
	// stableFor is how long the pool's NodeClaims must stay unchanged,
	// with nothing disrupting and nothing pending, to count as settled.
	stableFor = 30 * time.Second
)

// counters karp exposes that the suite reads before and after each step.
const (
	apiRequests = "rest_client_requests_total"
	evictions   = "karpenter_pods_eviction_requests_total"
)

// TestScaleDiverse scales the diverse mix to KARP_SCALE_PODS pods, then
// each workload to 30% of its replicas, then back, and logs one BENCH line
// per step.
func TestScaleDiverse(t *testing.T) {
	if os.Getenv(scaleEnv) == "" {
		t.Skipf("scale suite: set %s=1 (make bench-e2e does) to run it", scaleEnv)
	}
	n := 10000
	if v := os.Getenv(podsEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("%s=%q is not a positive number of pods", podsEnv, v)
		}
	}
	f := framework.Current(t)
	// Without client-side rate limits: at client-go's default of 5
	// requests a second (burst 10), creating 667 Deployments would take
	// two minutes of the measured time.
	cfg := rest.CopyConfig(f.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	cl, err := client.New(cfg, client.Options{Scheme: f.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	np := test.MakeNodePool(pool).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized).
		ConsolidateAfter(karpv1.MustParseNillableDuration("30s")).
		Budgets(karpv1.Budget{Nodes: "10%"}).Obj()
	framework.CreatePool(t, cl, pool, np)
	// Leader election is off: on a loaded 2-core machine the lease can
	// lapse and stop the controller mid-run.
	k := framework.StartKarp(t, f, append(framework.FastDisruptionArgs, "--disable-leader-election")...)
	t.Cleanup(func() { framework.DeletePool(cl, pool) })
	its, err := kwok.LoadInstanceTypes("", nil)
	if err != nil {
		t.Fatal(err)
	}
	deploys, replicas := diverseWorkload(t, n)
	t.Logf("%d pods in %d Deployments", n, len(deploys))

	// The controller serves its metrics once it has started.
	until(t, 2*time.Minute, func(ctx context.Context) (bool, string) {
		_, err := k.CounterSums(ctx, apiRequests)
		return err == nil, fmt.Sprint(err)
	})

	// Up.
	before := read(t, k)
	start := time.Now()
	apply(t, cl, deploys, func(d *appsv1.Deployment) error { return cl.Create(t.Context(), d) })
	waitRunning(t, cl, n)
	up := time.Since(start)
	after := read(t, k)
	cost, nodes := framework.PoolCost(t.Context(), cl, pool, its)
	bound := solverCost(t, np, its, deploys)
	t.Logf("BENCH up: %d pods Running in %s; %d nodes, $%.2f/hour, %.3f× the simulator's solve from scratch ($%.2f); "+
		"controller peak RSS %d MiB, %.1f CPU-s, %.2f API requests per pod",
		n, up.Round(time.Second), nodes, cost, cost/bound, bound,
		framework.ProcessPeakRSS(t, k.PID())>>20, after.cpu-before.cpu, (after.requests-before.requests)/float64(n))

	// Down to 30% of the pods, each workload to its share.
	want := 0
	for i, r := range downTo(replicas, downFraction) {
		deploys[i].Spec.Replicas = ptr.To(int32(r))
		want += r
	}
	before = read(t, k)
	claimsBefore := framework.PoolNodeClaimsByName(t.Context(), cl, pool)
	start = time.Now()
	apply(t, cl, deploys, func(d *appsv1.Deployment) error { return scaleTo(t.Context(), cl, d) })
	firstGone, settledAt := settle(t, cl, want, claimsBefore)
	after = read(t, k)
	claimsAfter := framework.PoolNodeClaimsByName(t.Context(), cl, pool)
	removed := 0
	for name := range claimsBefore {
		if _, ok := claimsAfter[name]; !ok {
			removed++
		}
	}
	costDown, _ := framework.PoolCost(t.Context(), cl, pool, its)
	perMinute, perNode := 0.0, 0.0
	if removed > 0 && !firstGone.IsZero() {
		perMinute = float64(removed) / max(settledAt.Sub(firstGone).Minutes(), 1.0/60)
		perNode = (after.evictions - before.evictions) / float64(removed)
	}
	t.Logf("BENCH down: %d → %d pods; settled %s after the scale-down; nodes %d → %d (%d removed, %.1f a minute from the first removal), "+
		"$%.2f → $%.2f/hour; %.1f eviction requests per removed node; controller %.1f CPU-s, peak RSS %d MiB",
		n, want, settledAt.Sub(start).Round(time.Second), len(claimsBefore), len(claimsAfter), removed, perMinute,
		cost, costDown, perNode, after.cpu-before.cpu, framework.ProcessPeakRSS(t, k.PID())>>20)

	// Back up.
	for i, d := range deploys {
		d.Spec.Replicas = ptr.To(int32(replicas[i]))
	}
	before = read(t, k)
	start = time.Now()
	apply(t, cl, deploys, func(d *appsv1.Deployment) error { return scaleTo(t.Context(), cl, d) })
	waitRunning(t, cl, n)
	back := time.Since(start)
	after = read(t, k)
	costBack, nodesBack := framework.PoolCost(t.Context(), cl, pool, its)
	t.Logf("BENCH back up: %d → %d pods Running in %s; %d nodes, $%.2f/hour; controller %.1f CPU-s, peak RSS %d MiB",
		want, n, back.Round(time.Second), nodesBack, costBack, after.cpu-before.cpu, framework.ProcessPeakRSS(t, k.PID())>>20)
}

// downTo shares round(fraction × total) replicas among the workloads in
// proportion to their counts (largest remainder first), so the total is
// the fraction asked for although most workloads of the mix have one or
// two pods.
func downTo(replicas []int, fraction float64) []int {
	total := 0
	for _, r := range replicas {
		total += r
	}
	want := int(math.Round(fraction * float64(total)))
	out := make([]int, len(replicas))
	order := make([]int, len(replicas))
	given := 0
	for i, r := range replicas {
		out[i] = int(fraction * float64(r))
		given += out[i]
		order[i] = i
	}
	rest := func(i int) float64 { return fraction*float64(replicas[i]) - float64(out[i]) }
	sort.SliceStable(order, func(a, b int) bool { return rest(order[a]) > rest(order[b]) })
	for _, i := range order[:want-given] {
		out[i]++
	}
	return out
}

// figures are the controller's counters at one moment.
type figures struct{ cpu, requests, evictions float64 }

func read(t *testing.T, k *framework.Karp) figures {
	t.Helper()
	sums, err := k.CounterSums(t.Context(), apiRequests, evictions)
	if err != nil {
		t.Fatal(err)
	}
	return figures{cpu: framework.ProcessCPUSeconds(t, k.PID()), requests: sums[0], evictions: sums[1]}
}

// diverseWorkload turns the first n pods of the benchmark's diverse mix
// into Deployments, one per set of pods with the same labels and spec (the
// mix's anti-affinity and spread selectors keep matching what they matched),
// and returns them with each one's replica count, in the same order.
func diverseWorkload(t *testing.T, n int) ([]*appsv1.Deployment, []int) {
	t.Helper()
	file := "pods-diverse-20000.json"
	switch {
	case n <= 1000:
		file = "pods-diverse-1000.json"
	case n <= 5000:
		file = "pods-diverse-5000.json"
	}
	if n > 20000 {
		t.Fatalf("%s=%d: the mix has 20,000 pods at most", podsEnv, n)
	}
	raw, err := os.ReadFile(fixtures.Bench(t, file))
	if err != nil {
		t.Fatal(err)
	}
	var list corev1.PodList
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatalf("reading %s: %v", file, err)
	}
	if len(list.Items) < n {
		t.Fatalf("%s has %d pods, fewer than %d", file, len(list.Items), n)
	}
	var deploys []*appsv1.Deployment
	var replicas []int
	index := map[string]int{}
	for _, p := range list.Items[:n] {
		key, err := json.Marshal([]any{p.Labels, p.Spec})
		if err != nil {
			t.Fatal(err)
		}
		if i, ok := index[string(key)]; ok {
			replicas[i]++
			continue
		}
		index[string(key)] = len(deploys)
		name := fmt.Sprintf("mix-%04d", len(deploys))
		labels := map[string]string{"scale-workload": name}
		for k, v := range p.Labels {
			labels[k] = v
		}
		spec := *p.Spec.DeepCopy()
		if spec.NodeSelector == nil {
			spec.NodeSelector = map[string]string{}
		}
		spec.NodeSelector[karpv1.NodePoolLabelKey] = pool
		deploys = append(deploys, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pool},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"scale-workload": name}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
			},
		})
		replicas = append(replicas, 1)
	}
	for i, d := range deploys {
		d.Spec.Replicas = ptr.To(int32(replicas[i]))
	}
	return deploys, replicas
}

// apply runs do on every Deployment, eight at a time, and fails the test on
// the first error.
func apply(t *testing.T, cl client.Client, deploys []*appsv1.Deployment, do func(*appsv1.Deployment) error) {
	t.Helper()
	var wg sync.WaitGroup
	work := make(chan *appsv1.Deployment)
	errs := make(chan error, len(deploys))
	for range 8 {
		wg.Go(func() {
			for d := range work {
				if err := do(d); err != nil {
					errs <- fmt.Errorf("%s: %w", d.Name, err)
				}
			}
		})
	}
	for _, d := range deploys {
		work <- d
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// scaleTo sets the live Deployment's replicas to d's.
func scaleTo(ctx context.Context, cl client.Client, d *appsv1.Deployment) error {
	patch := client.MergeFrom(&appsv1.Deployment{ObjectMeta: d.ObjectMeta})
	live := &appsv1.Deployment{ObjectMeta: d.ObjectMeta, Spec: appsv1.DeploymentSpec{Replicas: d.Spec.Replicas}}
	return cl.Patch(ctx, live, patch)
}

// waitRunning waits until want pods of the workload run on nodes.
func waitRunning(t *testing.T, cl client.Client, want int) {
	t.Helper()
	until(t, time.Hour, func(ctx context.Context) (bool, string) {
		running, pending := countPods(ctx, cl)
		return running == want && pending == 0, fmt.Sprintf("%d of %d pods running, %d pending", running, want, pending)
	})
}

// countPods counts the workload's pods running on a node and those not
// yet bound.
func countPods(ctx context.Context, cl client.Client) (running, pending int) {
	var list corev1.PodList
	if err := cl.List(ctx, &list, client.InNamespace(pool)); err != nil {
		return 0, 0
	}
	for _, p := range list.Items {
		switch {
		case p.DeletionTimestamp != nil:
		case p.Spec.NodeName == "":
			pending++
		case p.Status.Phase == corev1.PodRunning:
			running++
		}
	}
	return running, pending
}

// settle waits until want pods run, none is pending, and the pool's
// NodeClaims have settled (framework.SettleNodePool). It returns when the
// first of the NodeClaims in before went and when the last change was
// seen.
func settle(t *testing.T, cl client.Client, want int, before map[string]karpv1.NodeClaim) (firstGone, lastChange time.Time) {
	t.Helper()
	lastChange = framework.SettleNodePool(t, cl, framework.Settle{
		Pool: pool, Stable: stableFor, Timeout: time.Hour, Interval: poll,
		Pods: func(ctx context.Context) (bool, string) {
			running, pending := countPods(ctx, cl)
			return pending == 0 && running == want, fmt.Sprintf("%d of %d pods running, %d pending", running, want, pending)
		},
		Seen: func(claims []karpv1.NodeClaim) {
			kept := 0
			for _, nc := range claims {
				if _, ok := before[nc.Name]; ok {
					kept++
				}
			}
			if firstGone.IsZero() && kept < len(before) {
				firstGone = time.Now()
			}
		},
	})
	return firstGone, lastChange
}

// until checks cond every poll until it holds or timeout passes.
func until(t *testing.T, timeout time.Duration, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	framework.Poll(t, timeout, poll, cond)
}

// solverCost is what karp's simulator pays to run the Deployments' pods
// (at their current replica counts) from scratch in the pool: the figure
// the scale-out's cost is compared with.
func solverCost(t *testing.T, np *karpv1.NodePool, its []*scheduling.InstanceType, deploys []*appsv1.Deployment) float64 {
	t.Helper()
	var pods []*corev1.Pod
	for _, d := range deploys {
		for i := range int(*d.Spec.Replicas) {
			name := fmt.Sprintf("%s-%d", d.Name, i)
			pods = append(pods, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pool, UID: types.UID(name), Labels: d.Spec.Template.Labels},
				Spec:       *d.Spec.Template.Spec.DeepCopy(),
			})
		}
	}
	res := simulation.Solve(t.Context(), simulation.Input{Pods: pods, NodePools: []*simulation.NodePool{{NodePool: np, InstanceTypes: its}}})
	if len(res.PodErrors) > 0 {
		t.Fatalf("simulating the workload from scratch: %d pods unplaced: %s", len(res.PodErrors), res.PodErrors[0].Status.Message())
	}
	return res.Cost()
}
