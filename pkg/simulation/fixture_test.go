package simulation

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// Zones of the test instance types.
const (
	zoneA = "test-zone-a"
	zoneB = "test-zone-b"
	zoneC = "test-zone-c"
)

// Custom instance labels of the test types (well-known because the types
// define them).
const (
	labelFamily = "example.com/instance-family"
	labelCPU    = "example.com/instance-cpu"
)

// makeType builds a test instance type with on-demand offerings at price
// and spot offerings at 40% of it in zones a, b and c; allocatable equals
// capacity so numbers in tests stay round.
func makeType(name, arch string, price float64, capacity ...string) *scheduling.InstanceType {
	rl := test.ResourceList(capacity...)
	cpu := rl[corev1.ResourceCPU]
	lbls := map[string]string{corev1.LabelArchStable: arch, corev1.LabelOSStable: "linux",
		labelFamily: strings.SplitN(name, "-", 2)[0], labelCPU: fmt.Sprint(cpu.Value())}
	var offerings []*scheduling.Offering
	for _, z := range []string{zoneA, zoneB, zoneC} {
		offerings = append(offerings,
			&scheduling.Offering{Zone: z, CapacityType: karpv1.CapacityTypeOnDemand, Price: price, Available: true},
			&scheduling.Offering{Zone: z, CapacityType: karpv1.CapacityTypeSpot, Price: price * 0.4, Available: true})
	}
	return scheduling.NewInstanceType(name, lbls, rl, rl.DeepCopy(), offerings)
}

// testTypes is the default catalog: prices grow a little slower than size,
// so one larger node is cheaper than two halves.
func testTypes() []*scheduling.InstanceType {
	return []*scheduling.InstanceType{
		makeType("general-small", "amd64", 0.10, "cpu", "2", "memory", "4Gi", "pods", "10"),
		makeType("general-medium", "amd64", 0.19, "cpu", "4", "memory", "8Gi", "pods", "20"),
		makeType("general-large", "amd64", 0.36, "cpu", "8", "memory", "16Gi", "pods", "40"),
		makeType("arm-medium", "arm64", 0.15, "cpu", "4", "memory", "8Gi", "pods", "20"),
		makeType("memory-large", "amd64", 0.30, "cpu", "4", "memory", "32Gi", "pods", "20"),
		makeType("gpu-large", "amd64", 2.00, "cpu", "8", "memory", "32Gi", "pods", "20", "nvidia.com/gpu", "4"),
	}
}

// withTypes pairs a NodePool with the test catalog (or the given types).
func withTypes(np *karpv1.NodePool, types ...*scheduling.InstanceType) *NodePool {
	if len(types) == 0 {
		types = testTypes()
	}
	return &NodePool{NodePool: np, InstanceTypes: types}
}

// existingNode turns a built Node plus bound pods into solver input.
func existingNode(n *corev1.Node, pods ...*corev1.Pod) *Node {
	for _, p := range pods {
		p.Spec.NodeName = n.Name
		p.Status.Phase = corev1.PodRunning
	}
	return &Node{Name: n.Name, Labels: n.Labels, Taints: n.Spec.Taints, Capacity: n.Status.Capacity,
		Allocatable: n.Status.Allocatable, Pods: pods, Initialized: true}
}

// solveCase is one table entry: an input and what must come out. Every
// case also passes checkInvariants.
type solveCase struct {
	pods        []*corev1.Pod
	nodes       []*Node
	daemonSets  []*appsv1.DaemonSet
	limitRanges []corev1.LimitRange
	namespaces  []*corev1.Namespace
	pools       []*NodePool // nil: one NodePool "default" with testTypes
	volumes     map[types.UID][]scheduling.Requirements
	opts        Options

	claims   *int              // number of NodeClaims
	onType   map[string]string // pod -> instance type of its NodeClaim
	inPool   map[string]string // pod -> NodePool of its NodeClaim
	inZone   map[string]string // pod -> zone of its NodeClaim
	onNode   map[string]string // pod -> existing node
	reasons  map[string]string // pod -> Status.Message()
	together [][]string        // pods sharing one NodeClaim or node
	apart    [][]string        // pods on pairwise different nodes
	check    func(t *testing.T, res *Result)
}

func n(i int) *int { return &i }

func (tc *solveCase) input() Input {
	pools := tc.pools
	if pools == nil {
		pools = []*NodePool{withTypes(test.MakeNodePool("default").Obj())}
	}
	return Input{Pods: tc.pods, Nodes: tc.nodes, DaemonSets: tc.daemonSets, LimitRanges: tc.limitRanges,
		Namespaces: tc.namespaces, NodePools: pools, VolumeRequirements: tc.volumes, Options: tc.opts}
}

func runCases(t *testing.T, cases map[string]solveCase) {
	t.Helper()
	names := make([]string, 0, len(cases))
	for name := range cases {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		tc := cases[name]
		t.Run(name, func(t *testing.T) {
			in := tc.input()
			res := Solve(t.Context(), in)
			checkInvariants(t, in, res)
			tc.assert(t, res)
		})
	}
}

// where maps each placed pod to "nodeclaim-<i>" or "node-<name>".
func where(res *Result) map[string]string {
	out := map[string]string{}
	for _, pl := range res.Order {
		if pl.NodeClaim >= 0 {
			out[pl.Pod.Name] = fmt.Sprintf("nodeclaim-%d", pl.NodeClaim)
		} else {
			out[pl.Pod.Name] = "node-" + pl.Node.Name
		}
	}
	return out
}

func claimOf(res *Result, pod string) *NodeClaim {
	for _, pl := range res.Order {
		if pl.Pod.Name == pod && pl.NodeClaim >= 0 {
			return res.NodeClaims[pl.NodeClaim]
		}
	}
	return nil
}

func (tc *solveCase) assert(t *testing.T, res *Result) {
	t.Helper()
	loc := where(res)
	gotReasons := map[string]string{}
	for _, pe := range res.PodErrors {
		gotReasons[pe.Pod.Name] = pe.Status.Message()
	}
	if tc.claims != nil && len(res.NodeClaims) != *tc.claims {
		t.Errorf("got %d NodeClaims, want %d (placements %v, errors %v)", len(res.NodeClaims), *tc.claims, loc, gotReasons)
	}
	for pod, want := range tc.reasons {
		if got := gotReasons[pod]; got != want {
			t.Errorf("pod %s reason:\n got %q\nwant %q", pod, got, want)
		}
	}
	for pod := range gotReasons {
		if _, ok := tc.reasons[pod]; !ok {
			t.Errorf("pod %s unexpectedly unplaced: %s", pod, gotReasons[pod])
		}
	}
	for pod, want := range tc.onNode {
		if got := loc[pod]; got != "node-"+want {
			t.Errorf("pod %s on %q, want node %s", pod, got, want)
		}
	}
	tc.assertClaims(t, res)
	for _, group := range tc.together {
		for _, p := range group[1:] {
			if loc[p] == "" || loc[p] != loc[group[0]] {
				t.Errorf("pods %s (%s) and %s (%s) should share a node", group[0], loc[group[0]], p, loc[p])
			}
		}
	}
	for _, group := range tc.apart {
		seen := map[string]string{}
		for _, p := range group {
			if other, ok := seen[loc[p]]; ok || loc[p] == "" {
				t.Errorf("pods %s and %s share %q, want them apart", other, p, loc[p])
			}
			seen[loc[p]] = p
		}
	}
	if tc.check != nil {
		tc.check(t, res)
	}
}

func (tc *solveCase) assertClaims(t *testing.T, res *Result) {
	t.Helper()
	for pod, want := range tc.onType {
		if nc := claimOf(res, pod); nc == nil || nc.InstanceType.Name != want {
			t.Errorf("pod %s: NodeClaim type %v, want %s", pod, typeName(nc), want)
		}
	}
	for pod, want := range tc.inPool {
		if nc := claimOf(res, pod); nc == nil || nc.NodePool.Name != want {
			t.Errorf("pod %s: NodePool of its NodeClaim is not %s", pod, want)
		}
	}
	for pod, want := range tc.inZone {
		if nc := claimOf(res, pod); nc == nil || nc.Offering.Zone != want {
			zone := ""
			if nc != nil {
				zone = nc.Offering.Zone
			}
			t.Errorf("pod %s: zone %q, want %s", pod, zone, want)
		}
	}
}

func typeName(nc *NodeClaim) string {
	if nc == nil {
		return "<none>"
	}
	return nc.InstanceType.Name
}

// pods builds count pods named prefix-0.. from a template builder.
func pods(prefix string, count int, build func(*test.PodWrapper) *test.PodWrapper) []*corev1.Pod {
	out := make([]*corev1.Pod, count)
	for i := range out {
		out[i] = build(test.MakePod(fmt.Sprintf("%s-%d", prefix, i))).Obj()
	}
	return out
}

func names(prefix string, count int) []string {
	out := make([]string, count)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

func list(ps ...[]*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range ps {
		out = append(out, p...)
	}
	return out
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return test.NodeSelectorRequirement(key, op, values...)
}

// appsDaemonSet shortens table literals.
type appsDaemonSet = appsv1.DaemonSet

// testNow is a fixed time for timestamps in fixtures.
var testNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
