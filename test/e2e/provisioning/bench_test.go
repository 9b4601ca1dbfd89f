package provisioning_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// benchEnv turns TestBenchmarkThousandPods on. It is off in `make test`:
// it restarts the controller on another catalog, launches ~80 nodes and
// its numbers only mean something on an otherwise idle machine.
const benchEnv = "KARP_BENCH"

// TestBenchmarkThousandPods runs upstream's performance suite "basic"
// workload and reports, not asserts, how long karp took (see
// docs/performance.md): 500 pods at 900m/3100Mi and 500 at 3500m/28Gi on
// a NodePool of types with at most 32 cpu, from the kwok provider's
// bench catalog.
func TestBenchmarkThousandPods(t *testing.T) {
	if os.Getenv(benchEnv) == "" {
		t.Skipf("benchmark: set %s=1 to run it", benchEnv)
	}
	catalogPath := fixtures.Bench(t, "kwok-instance-types.json")
	types, err := kwok.LoadInstanceTypes(catalogPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--instance-types-file-path=" + catalogPath}
	profileDir := os.Getenv("KARP_BENCH_PPROF")
	if profileDir != "" {
		args = append(args, "--enable-profiling", "--metrics-port="+strconv.Itoa(pprofPort))
	}
	args = append(args, strings.Fields(os.Getenv("KARP_BENCH_ARGS"))...)
	pid := restartControllerWith(t, args...)
	t.Cleanup(stopController)
	ensureNodeClass(t)
	nodePool := pool("bench").ConsolidateAfter(karpv1.NillableDuration{}).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand).
		Requirement(kwokv1alpha1.InstanceCPULabelKey, corev1.NodeSelectorOpLt, "33").Obj()
	// The bench catalog has linux and windows, amd64 and arm64 types: no
	// os or arch requirement.
	nodePool.Spec.Template.Spec.Requirements = nodePool.Spec.Template.Spec.Requirements[2:]
	create(t, nodePool)
	waitNodePoolReady(t, "bench")
	requestsBefore := apiRequests(t)
	cpuBefore := framework.ProcessCPUSeconds(t, pid)
	hwmBefore := framework.ProcessPeakRSS(t, pid)

	small := deployment("bench-small", 500, "900m", "3100Mi", onPool("bench"))
	large := deployment("bench-large", 500, "3500m", "28Gi", onPool("bench"))
	start := time.Now()
	if profileDir != "" {
		go fetchProfile(t, profileDir, "cpu.pprof", "profile?seconds=40")
		go func() {
			time.Sleep(12 * time.Second) // about when most nodes register
			fetchProfile(t, profileDir, "heap-mid.pprof", "heap?gc=1")
		}()
	}
	create(t, small, large)
	lastReady := waitAllRunning(t, []string{"bench-small", "bench-large"}, 1000)
	// Container start times have one-second resolution.
	elapsed := lastReady.Sub(start.Truncate(time.Second))
	peakRSS := framework.ProcessPeakRSS(t, pid)
	requestsAfter := apiRequests(t)
	cpuAfter := framework.ProcessCPUSeconds(t, pid)

	nodes := nodesOf(t, "bench")
	cost, counts := 0.0, map[string]int{}
	prices := map[string]float64{}
	for _, it := range types {
		for _, o := range it.Offerings {
			prices[it.Name+"/"+o.Zone+"/"+o.CapacityType] = o.Price
		}
	}
	for _, n := range nodes {
		l := n.Labels
		cost += prices[l[corev1.LabelInstanceTypeStable]+"/"+l[corev1.LabelTopologyZone]+"/"+l[karpv1.CapacityTypeLabelKey]]
		counts[l[karpv1.CapacityTypeLabelKey]]++
	}
	bound := fractionalBound(types, []*corev1.Pod{podOf(small), podOf(large)}, 500, 33)
	t.Logf("BENCH 1000 pods Running in %.1fs; controller peak RSS %.1f MB, CPU %.2fs during the run (%.2fs since start); "+
		"%d nodes %v, $%.2f/hour, %.3f x the fractional bound $%.2f/hour",
		elapsed.Seconds(), float64(peakRSS)/1e6, cpuAfter-cpuBefore, cpuAfter, len(nodes), counts, cost, cost/bound, bound)
	keepControllerLog(t)
	if profileDir != "" {
		fetchProfile(t, profileDir, "heap.pprof", "heap")
		time.Sleep(30 * time.Second) // let the CPU profile finish
	}
	t.Logf("BENCH controller peak RSS before the Deployments: %.1f MB", float64(hwmBefore)/1e6)
	t.Logf("BENCH timeline (Deployments created at %s): %s", start.UTC().Format("15:04:05.000"), podTimeline(t, append(podsOf(t, "default", "bench-small"), podsOf(t, "default", "bench-large")...), start))
	t.Logf("BENCH nodeclaims: %s", nodeClaimTimeline(nodeClaimsOf(t, "bench"), start))
	t.Logf("BENCH API requests until all pods ran: %s", requestDelta(requestsBefore, requestsAfter))
}

// nodeClaimTimeline says when the first and the last NodeClaim were
// created, launched, registered and initialized, in seconds after start
// (conditions have one-second resolution).
func nodeClaimTimeline(claims []karpv1.NodeClaim, start time.Time) string {
	since := func(at time.Time) float64 { return at.Sub(start.Truncate(time.Second)).Seconds() }
	stages := []string{"Created", karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized}
	var b strings.Builder
	for _, stage := range stages {
		var first, last time.Time
		n := 0
		for i := range claims {
			at := claims[i].CreationTimestamp.Time
			if stage != "Created" {
				c := claims[i].StatusConditions().Get(stage)
				if c == nil || c.Status != metav1.ConditionTrue {
					continue
				}
				at = c.LastTransitionTime.Time
			}
			n++
			if first.IsZero() || at.Before(first) {
				first = at
			}
			last = later(last, at)
		}
		fmt.Fprintf(&b, "%s %d (%.0f-%.0fs) ", strings.ToLower(stage), n, since(first), since(last))
	}
	return strings.TrimSpace(b.String())
}

// waitNodePoolReady waits until the controller reports the NodePool Ready.
func waitNodePoolReady(t *testing.T, name string) {
	t.Helper()
	framework.Eventually(t, scaleTimeout, func(ctx context.Context) (bool, string) {
		got := &karpv1.NodePool{}
		if err := framework.Current(t).Client.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
			return false, err.Error()
		}
		return got.StatusConditions().IsTrue(karpv1.ConditionTypeReady), fmt.Sprintf("NodePool %s not Ready: %v", name, got.Status.Conditions)
	})
}

func podOf(d *appsv1.Deployment) *corev1.Pod {
	return &corev1.Pod{Spec: *d.Spec.Template.Spec.DeepCopy()}
}

// startedAt is when the pod's first container started running.
func startedAt(pod *corev1.Pod) time.Time {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running != nil {
			return cs.State.Running.StartedAt.Time
		}
	}
	return time.Time{}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// fractionalBound is the cost lower bound docs/performance.md uses: per
// resource, the pods' total request priced at the cheapest $ per unit any
// allowed offering sells (types under maxCPU cpu); the largest of these.
func fractionalBound(types []*scheduling.InstanceType, pods []*corev1.Pod, replicas int, maxCPU int64) float64 {
	best := 0.0
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		total := 0.0
		for _, p := range pods {
			q := p.Spec.Containers[0].Resources.Requests[name]
			total += q.AsApproximateFloat64() * float64(replicas)
		}
		cheapest := -1.0
		for _, it := range types {
			cpu := it.Capacity[corev1.ResourceCPU]
			c := it.Capacity[name]
			if cpu.Value() >= maxCPU || c.IsZero() {
				continue
			}
			for _, o := range it.Offerings {
				if per := o.Price / c.AsApproximateFloat64(); cheapest < 0 || per < cheapest {
					cheapest = per
				}
			}
		}
		best = max(best, total*cheapest)
	}
	return best
}

// keepControllerLog copies the controller's log to the file KARP_BENCH_LOG
// names, if set, since the cluster directory goes when the suite passes.
func keepControllerLog(t *testing.T) {
	dst := os.Getenv("KARP_BENCH_LOG")
	if dst == "" {
		return
	}
	raw, err := os.ReadFile(controllerLog)
	if err == nil {
		err = os.WriteFile(dst, raw, 0o644)
	}
	if err != nil {
		t.Errorf("keeping the controller log: %v", err)
	}
}

// pprofPort is where the controller serves pprof when KARP_BENCH_PPROF
// names a directory to write profiles to.
const pprofPort = 18081

// fetchProfile saves the controller's pprof endpoint what to dir/name.
func fetchProfile(t *testing.T, dir, name, what string) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/%s", pprofPort, what))
	if err != nil {
		t.Logf("profile %s: %v", name, err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, name), raw, 0o644)
	}
	if err != nil {
		t.Logf("profile %s: %v", name, err)
	}
}

// apiRequests reads the API server's apiserver_request_total counters,
// keyed "VERB resource[/subresource]".
func apiRequests(t *testing.T) map[string]float64 {
	t.Helper()
	cs, err := kubernetes.NewForConfig(framework.Current(t).Config)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("reading the API server's metrics: %v", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("parsing the API server's metrics: %v", err)
	}
	counts := map[string]float64{}
	for _, m := range families["apiserver_request_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		key := labels["verb"] + " " + labels["resource"]
		if sub := labels["subresource"]; sub != "" {
			key += "/" + sub
		}
		counts[key] += m.GetCounter().GetValue()
	}
	return counts
}

// requestDelta says how many requests of each kind the API server served
// between two apiRequests readings, the most frequent first.
func requestDelta(before, after map[string]float64) string {
	type kind struct {
		name string
		n    float64
	}
	var kinds []kind
	total := 0.0
	for name, n := range after {
		if d := n - before[name]; d > 0 {
			kinds = append(kinds, kind{name, d})
			total += d
		}
	}
	slices.SortFunc(kinds, func(a, b kind) int { return cmp.Compare(b.n, a.n) })
	var b strings.Builder
	fmt.Fprintf(&b, "%.0f in all", total)
	for _, k := range kinds[:min(len(kinds), 14)] {
		fmt.Fprintf(&b, ", %s %.0f", k.name, k.n)
	}
	return b.String()
}

// waitAllRunning waits until want pods of the Deployments named apps are
// in phase Running on a node, and returns the latest container start time
// among them: the benchmarks' time comes from the pods, not from when the
// poll noticed. It polls gently, since the machine is saturated while pods
// start: once a second it reads the two Deployments' status, and lists
// the pods (1,000 of them, the costliest read of the run) only once their
// ready counts add up to want, or every 10s in case a Ready condition
// flips back (the node lifecycle controller does when kwok renews a
// lease late, which says nothing about where the pods are).
func waitAllRunning(t *testing.T, apps []string, want int) time.Time {
	t.Helper()
	var lastStart, lastList time.Time
	framework.Eventually(t, 10*time.Minute, func(ctx context.Context) (bool, string) {
		time.Sleep(time.Second)
		ready := int32(0)
		for _, app := range apps {
			d := &appsv1.Deployment{}
			if err := framework.Current(t).Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: app}, d); err != nil {
				return false, err.Error()
			}
			ready += d.Status.ReadyReplicas
		}
		if int(ready) < want && time.Since(lastList) < 10*time.Second {
			return false, fmt.Sprintf("%d of %d pods ready per the Deployments", ready, want)
		}
		lastList = time.Now()
		n := 0
		lastStart = time.Time{}
		for _, app := range apps {
			for _, pod := range podsOf(t, "default", app) {
				if pod.Spec.NodeName != "" && pod.Status.Phase == corev1.PodRunning {
					n++
					lastStart = later(lastStart, startedAt(&pod))
				}
			}
		}
		return n == want, fmt.Sprintf("%d of %d pods running", n, want)
	})
	return lastStart
}
