package simulation

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestNodeCacheGivesTheSameAnswers runs the what-ifs of a pass (several
// candidate sets over the same nodes, twice) with one shared NodeCache and
// without: every answer is the same, including for a pod whose requests
// come from a LimitRange default and one naming an extended resource.
func TestNodeCacheGivesTheSameAnswers(t *testing.T) {
	small := makeType("general-small", "amd64", 0.10, "cpu", "2", "memory", "4Gi", "pods", "10")
	big := makeType("general-huge", "amd64", 1.00, "cpu", "8", "memory", "16Gi", "pods", "40")
	types := onDemandOnly([]*scheduling.InstanceType{small, big})
	pool := withTypes(test.MakeNodePool("default").Obj(), types...)
	defaulted := test.MakePod("defaulted").Namespace("default").UID("defaulted").Obj()
	extended := test.MakePod("extended").Namespace("default").UID("extended").Requests("cpu", "1", "example.com/widget", "1").Obj()
	nodes := []*Node{
		poolNode("a", small, cpuPod("p1", "500m")),
		poolNode("b", small, defaulted),
		poolNode("c", big, cpuPod("p3", "5"), extended),
		poolNode("d", small, cpuPod("p4", "1")),
	}
	limitRanges := []corev1.LimitRange{limitRange("default", nil, test.ResourceList("cpu", "1500m"))}
	sets := [][]string{{"a"}, {"b"}, {"a", "b"}, {"c"}, {"a", "d"}, {"b", "d"}}
	answer := func(in Input, names []string) string {
		var cands []ConsolidationCandidate
		for _, n := range names {
			cands = append(cands, ConsolidationCandidate{Name: n, Price: 0.10})
		}
		got := Consolidate(t.Context(), in, cands, ConsolidationOptions{RequireCheaper: true})
		return fmt.Sprintf("%s %d replacements, saves %.2f: %s", got.Decision, len(got.Replacements), got.Savings, got.Reason)
	}
	var want []string
	for _, set := range sets {
		want = append(want, answer(Input{Nodes: nodes, NodePools: []*NodePool{pool}, LimitRanges: limitRanges}, set))
	}
	cached := Input{Nodes: nodes, NodePools: []*NodePool{pool}, LimitRanges: limitRanges, NodeCache: NewNodeCache()}
	for round := range 2 {
		var got []string
		for _, set := range sets {
			got = append(got, answer(cached, set))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("round %d with a shared NodeCache (-without,+with):\n%s", round, diff)
		}
	}
	if got := len(cached.NodeCache.pods); got != 5 {
		t.Errorf("NodeCache holds %d pods, want the nodes' 5", got)
	}
	if got := len(cached.NodeCache.nodes); got != len(nodes) {
		t.Errorf("NodeCache holds %d nodes, want the %d", got, len(nodes))
	}
}

// TestWarmNodeCacheSavesPerPodWork guards what keeps a disruption pass
// cheap at scale: with a warm NodeCache a solve derives no node pod's
// requests again, so it allocates at least one object less per pod than
// a solve without one.
func TestWarmNodeCacheSavesPerPodWork(t *testing.T) {
	const nodeCount, podsPerNode = 50, 4
	small := makeType("general-small", "amd64", 0.10, "cpu", "2", "memory", "4Gi", "pods", "10")
	pool := withTypes(test.MakeNodePool("default").Obj(), onDemandOnly([]*scheduling.InstanceType{small})...)
	var nodes []*Node
	for i := range nodeCount {
		var pods []*corev1.Pod
		for j := range podsPerNode {
			name := fmt.Sprintf("p-%d-%d", i, j)
			pods = append(pods, test.MakePod(name).Namespace("default").UID(name).Requests("cpu", "100m", "memory", "128Mi").Obj())
		}
		nodes = append(nodes, poolNode(fmt.Sprintf("n-%d", i), small, pods...))
	}
	pending := []*corev1.Pod{cpuPod("pending", "500m")}
	checkWarmCacheSaves(t, Input{Nodes: nodes, Pods: pending, NodePools: []*NodePool{pool}}, nodeCount*podsPerNode, "one per pod")
}

// checkWarmCacheSaves fails unless a solve of in with a warm NodeCache
// allocates at least want objects fewer than one without; it returns the
// cached input.
func checkWarmCacheSaves(t *testing.T, uncached Input, want int, what string) Input {
	t.Helper()
	cached := uncached
	cached.NodeCache = NewNodeCache()
	Solve(t.Context(), cached) // warm it
	without := testing.AllocsPerRun(3, func() { Solve(t.Context(), uncached) })
	with := testing.AllocsPerRun(3, func() { Solve(t.Context(), cached) })
	t.Logf("allocations a solve: %.0f without a NodeCache, %.0f with a warm one", without, with)
	if saved := without - with; saved < float64(want) {
		t.Errorf("a warm NodeCache saved %.0f allocations a solve (%.0f → %.0f), want at least %s (%d)", saved, without, with, what, want)
	}
	return cached
}

// TestWarmNodeCacheSavesPerInstanceTypeWork: with a warm NodeCache a solve
// filters and converts none of its NodePools' instance types again (an
// object and two vectors each); a solve under another resource index (a
// pod asks for an extended resource) gets types converted for it, and
// answers as a solve without the cache does.
func TestWarmNodeCacheSavesPerInstanceTypeWork(t *testing.T) {
	var types []*scheduling.InstanceType
	for i := range 200 {
		types = append(types, makeType(fmt.Sprintf("type-%d", i), "amd64", 0.1+float64(i)/1000,
			"cpu", fmt.Sprint(2+i%16), "memory", fmt.Sprintf("%dGi", 4+i%32), "pods", "30", "example.com/gadget", fmt.Sprint(i%3)))
	}
	pool := withTypes(test.MakeNodePool("default").Obj(), onDemandOnly(types)...)
	nodes := []*Node{poolNode("n-0", types[0], cpuPod("p", "100m"))}
	uncached := Input{Nodes: nodes, Pods: []*corev1.Pod{cpuPod("pending", "500m")}, NodePools: []*NodePool{pool}}
	cached := checkWarmCacheSaves(t, uncached, 2*len(types), "two per instance type")

	gadget := test.MakePod("gadget").Namespace("default").UID("gadget").Requests("cpu", "1", "example.com/gadget", "2").Obj()
	withGadget := func(in Input) Input {
		in.Pods = append(slices.Clone(in.Pods), gadget)
		return in
	}
	want := solveSummary(Solve(t.Context(), withGadget(uncached)))
	if got := solveSummary(Solve(t.Context(), withGadget(cached))); got != want {
		t.Errorf("with a pod asking for example.com/gadget, the cached solve differs:\n%s\nvs without the cache:\n%s", got, want)
	}
	if !strings.Contains(want, "gadget") || strings.Contains(want, "unplaced gadget") {
		t.Errorf("the pod asking for example.com/gadget was not placed, so the check proves little:\n%s", want)
	}
	if got := len(cached.NodeCache.pools); got != 2 {
		t.Errorf("NodeCache holds %d pool type lists, want 2 (one per resource index)", got)
	}
}

// TestPassPlacesTheWaitingPodsOnce: the what-ifs of a Pass answer as
// Consolidate does for each candidate set alone, with pods pending (so
// each what-if first reserves their room), and after the first what-if a
// Pass solves no more for them: a what-if then allocates less than one
// made alone.
func TestPassPlacesTheWaitingPodsOnce(t *testing.T) {
	small := makeType("general-small", "amd64", 0.10, "cpu", "2", "memory", "4Gi", "pods", "10")
	big := makeType("general-huge", "amd64", 1.00, "cpu", "8", "memory", "16Gi", "pods", "40")
	pool := withTypes(test.MakeNodePool("default").Obj(), onDemandOnly([]*scheduling.InstanceType{small, big})...)
	nodes := []*Node{
		poolNode("a", small, cpuPod("p1", "500m")),
		poolNode("b", small, cpuPod("p2", "1")),
		poolNode("c", big, cpuPod("p3", "5")),
		poolNode("d", small, cpuPod("p4", "1")),
	}
	var pending []*corev1.Pod
	for i := range 6 {
		pending = append(pending, cpuPod(fmt.Sprintf("pending-%d", i), "300m"))
	}
	in := Input{Nodes: nodes, Pods: pending, NodePools: []*NodePool{pool}}
	candidateSets := [][]string{{"a"}, {"b"}, {"a", "b"}, {"c"}, {"a", "d"}, {"b", "d"}, {"d"}}
	cands := func(names []string) []ConsolidationCandidate {
		var out []ConsolidationCandidate
		for _, n := range names {
			out = append(out, ConsolidationCandidate{Name: n, Price: 0.10})
		}
		return out
	}
	answer := func(c *Consolidation) string {
		return fmt.Sprintf("%s %d replacements, saves %.2f: %s\n%s", c.Decision, len(c.Replacements), c.Savings, c.Reason, solveSummary(c.Result))
	}
	pass := NewPass(in)
	for _, set := range candidateSets {
		alone := answer(Consolidate(t.Context(), in, cands(set), ConsolidationOptions{RequireCheaper: true}))
		if got := answer(pass.Consolidate(t.Context(), cands(set), ConsolidationOptions{RequireCheaper: true})); got != alone {
			t.Errorf("candidates %v: the Pass answers\n%s\nalone:\n%s", set, got, alone)
		}
	}
	if pass.placed == nil {
		t.Fatal("the Pass kept no placement of the waiting pods")
	}
	opts := ConsolidationOptions{RequireCheaper: true}
	alone := testing.AllocsPerRun(3, func() { Consolidate(t.Context(), in, cands([]string{"a"}), opts) })
	inPass := testing.AllocsPerRun(3, func() { pass.Consolidate(t.Context(), cands([]string{"a"}), opts) })
	waiting := testing.AllocsPerRun(3, func() { Solve(t.Context(), in) })
	t.Logf("allocations a what-if: %.0f alone, %.0f in a Pass; the waiting pods' solve: %.0f", alone, inPass, waiting)
	if alone-inPass < waiting/2 {
		t.Errorf("a what-if in a Pass saved %.0f allocations (%.0f → %.0f), want most of the waiting pods' solve (%.0f)",
			alone-inPass, alone, inPass, waiting)
	}
}
