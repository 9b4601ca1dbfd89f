package simulation

import (
	"fmt"
	"math/rand"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// optimumTolerance is how many more pods, per cluster, a solve may leave
// pending in its limited NodePools than the exhaustive optimum does. The
// solver is a heuristic (first-fit placement, then compaction); the
// distribution over the seeds is logged.
const optimumTolerance = 1

// TestBindingLimitsAgainstOptimum solves random small clusters with two
// limited, weighted NodePools and an unlimited one, pods that only one
// limited NodePool can take (some with required hostname anti-affinity),
// flexible pods (preferred and required anti-affinity, zone spread),
// DaemonSets and existing nodes, and compares each solve with the
// exhaustive optimum of the pods each limited NodePool can place:
//   - never more pods pending than the optimum plus optimumTolerance, and
//     never fewer (that would mean the optimum, or a constraint, is wrong);
//   - no flexible pod pending: the unlimited NodePool takes every one;
//   - the limit accounting equals what the NodeClaims hold (see
//     checkLimitAccounting).
func TestBindingLimitsAgainstOptimum(t *testing.T) {
	excess := map[int]int{}
	solved := 0
	for seed := int64(1); seed <= 400; seed++ {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			bc := randomBindingCluster(rand.New(rand.NewSource(seed)))
			res := Solve(t.Context(), bc.in)
			checkInvariants(t, bc.in, res)
			checkLimitAccounting(t, bc.in, res)
			pending := map[string]int{}
			for _, pe := range res.PodErrors {
				pool := pe.Pod.Spec.NodeSelector[karpv1.NodePoolLabelKey]
				if pool == "" {
					t.Errorf("flexible pod %s pending although NodePool general is unlimited: %s", pe.Pod.Name, pe.Status.Message())
				}
				pending[pool]++
			}
			for _, lp := range bc.limited {
				lp.checkNoRoomLeft(t, res)
			}
			over := 0
			for _, lp := range bc.limited {
				opt := lp.optimumPending()
				if pending[lp.name] < opt {
					t.Errorf("NodePool %s: %d pods pending, fewer than the optimum %d", lp.name, pending[lp.name], opt)
				}
				over += pending[lp.name] - opt
			}
			excess[over]++
			solved++
			if over > optimumTolerance {
				t.Errorf("%d more pods pending than the optimum (tolerance %d)", over, optimumTolerance)
			}
		})
	}
	keys := make([]int, 0, len(excess))
	for k := range excess {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var dist []string
	for _, k := range keys {
		dist = append(dist, fmt.Sprintf("+%d: %d", k, excess[k]))
	}
	t.Logf("pods pending beyond the optimum, over %d clusters: %s", solved, strings.Join(dist, ", "))
}

// bindingCluster is a random cluster and, per limited NodePool, what its
// optimum needs.
type bindingCluster struct {
	in      Input
	limited []*limitedPool
}

// limitedPool is one limited NodePool as the exhaustive search sees it.
type limitedPool struct {
	name     string
	cpuRoom  int64 // millicpu the limit leaves after existing nodes
	nodeRoom int   // nodes the limit leaves, -1 unlimited
	types    []optType
	pods     []optPod // the pods only this NodePool can take
}

type optType struct {
	capCPU int64
	room   scheduling.Vector // allocatable less daemon overhead: cpu, memory, pods
}

type optPod struct {
	req  scheduling.Vector // cpu (m), memory (bytes), pods
	anti string            // app with required hostname anti-affinity to itself, or ""
}

// randomBindingCluster builds the cluster: five instance types, NodePools
// lim-a (weight 30) and lim-b (weight 20) with cpu limits (lim-a sometimes
// a node limit too) and general (weight 10, unlimited).
func randomBindingCluster(rng *rand.Rand) *bindingCluster {
	types := randomOptTypes(rng)
	bc := &bindingCluster{}
	in := &bc.in
	var overCPU, overMem int64
	if rng.Intn(2) == 0 {
		cpu := pick(rng, "100m", "200m", "300m")
		ds := test.MakeDaemonSet("agent").Requests("cpu", cpu, "memory", "128Mi").Obj()
		in.DaemonSets = append(in.DaemonSets, ds)
		q := resource.MustParse(cpu)
		overCPU = q.MilliValue()
		overMem = 128 << 20
	}
	pools := []struct {
		name   string
		weight int32
		cpu    int
	}{{"lim-a", 30, 4 + rng.Intn(21)}, {"lim-b", 20, 4 + rng.Intn(13)}, {"general", 10, 0}}
	for _, pd := range pools {
		w := test.MakeNodePool(pd.name).Weight(pd.weight)
		if pd.cpu > 0 {
			limits := test.ResourceList("cpu", fmt.Sprint(pd.cpu))
			if pd.name == "lim-a" && rng.Intn(3) == 0 {
				limits["nodes"] = resource.MustParse(fmt.Sprint(1 + rng.Intn(3)))
			}
			w = w.Limits(limits)
		}
		np := w.Obj()
		in.NodePools = append(in.NodePools, &NodePool{NodePool: np, InstanceTypes: types})
		if pd.cpu == 0 {
			continue
		}
		lp := &limitedPool{name: pd.name, cpuRoom: int64(pd.cpu) * 1000, nodeRoom: -1}
		if q, ok := np.Spec.Limits["nodes"]; ok {
			lp.nodeRoom = int(q.Value())
		}
		if rng.Intn(3) == 0 {
			// A full existing node takes part of the limit.
			n := existingFullNode(fmt.Sprintf("%s-existing", pd.name), pd.name)
			in.Nodes = append(in.Nodes, n)
			lp.cpuRoom -= 2000
			if lp.nodeRoom > 0 {
				lp.nodeRoom--
			}
		}
		for _, it := range types {
			alloc := it.Allocatable
			lp.types = append(lp.types, optType{capCPU: it.Capacity.Cpu().MilliValue(), room: scheduling.Vector{
				alloc.Cpu().MilliValue() - overCPU, alloc.Memory().Value() - overMem, alloc.Pods().Value()}})
		}
		bc.limited = append(bc.limited, lp)
	}
	// Pods only one limited NodePool can take.
	for _, lp := range bc.limited {
		for c := 0; c < 1+rng.Intn(3); c++ {
			app := fmt.Sprintf("%s-only-%d", lp.name, c)
			cpu := pick(rng, 250, 500, 1000, 1500, 2000, 3000)
			mem := int64(cpu) * int64(pick(rng, 1, 2, 4)) << 20
			anti := rng.Intn(4) == 0
			for i := 0; i < 1+rng.Intn(4); i++ {
				w := test.MakePod(fmt.Sprintf("%s-%d", app, i)).Label("app", app).
					Requests("cpu", fmt.Sprintf("%dm", cpu), "memory", fmt.Sprint(mem)).
					NodeSelector(map[string]string{karpv1.NodePoolLabelKey: lp.name})
				op := optPod{req: scheduling.Vector{int64(cpu), mem, 1}}
				if anti {
					w = w.PodAntiAffinity(corev1.LabelHostname, map[string]string{"app": app})
					op.anti = app
				}
				in.Pods = append(in.Pods, w.Obj())
				lp.pods = append(lp.pods, op)
			}
		}
	}
	// Flexible pods: any NodePool takes them.
	for c := 0; c < rng.Intn(4); c++ {
		app := fmt.Sprintf("flex-%d", c)
		cpu := pick(rng, "250m", "500m", "1", "2")
		shape := rng.Intn(4)
		for i := 0; i < 1+rng.Intn(6); i++ {
			w := test.MakePod(fmt.Sprintf("%s-%d", app, i)).Label("app", app).Requests("cpu", cpu, "memory", "1Gi")
			switch shape {
			case 1:
				w = w.PreferredPodAntiAffinity(100, corev1.LabelHostname, map[string]string{"app": app})
			case 2:
				w = w.PodAntiAffinity(corev1.LabelHostname, map[string]string{"app": app})
			case 3:
				w = w.Spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, map[string]string{"app": app})
			}
			in.Pods = append(in.Pods, w.Obj())
		}
	}
	return bc
}

// randomOptTypes are five types of 1 to 16 vCPU with 2, 4 or 8 GiB per
// vCPU, a kubelet reservation, and prices roughly linear in size.
func randomOptTypes(rng *rand.Rand) []*scheduling.InstanceType {
	var out []*scheduling.InstanceType
	seen := map[string]bool{}
	for len(out) < 5 {
		cpu := pick(rng, 1, 2, 4, 8, 16)
		if len(out) == 0 {
			cpu = 16 // every pod fits some type
		}
		gib := cpu * pick(rng, 2, 4, 8)
		name := fmt.Sprintf("t%d-%d", cpu, gib)
		if seen[name] {
			continue
		}
		seen[name] = true
		capacity := test.ResourceList("cpu", fmt.Sprint(cpu), "memory", fmt.Sprintf("%dGi", gib), "pods", "30")
		alloc := test.ResourceList("cpu", fmt.Sprintf("%dm", cpu*1000-70-10*cpu), "memory", fmt.Sprintf("%dMi", gib*1024-400-gib*20), "pods", "30")
		price := (0.04*float64(cpu) + 0.005*float64(gib)) * (0.9 + 0.2*rng.Float64())
		var offerings []*scheduling.Offering
		for _, z := range []string{zoneA, zoneB, zoneC} {
			offerings = append(offerings, &scheduling.Offering{Zone: z, CapacityType: karpv1.CapacityTypeOnDemand, Price: price, Available: true})
		}
		lbls := map[string]string{corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"}
		out = append(out, scheduling.NewInstanceType(name, lbls, capacity, alloc, offerings))
	}
	return out
}

// existingFullNode is a 2-cpu node of the NodePool that takes no new pod
// (a taint none tolerates).
func existingFullNode(name, pool string) *Node {
	n := test.MakeNode(name).Labels(map[string]string{karpv1.NodePoolLabelKey: pool, corev1.LabelTopologyZone: zoneA,
		corev1.LabelHostname: name}).Capacity("cpu", "2", "memory", "4Gi", "pods", "30").
		Allocatable("cpu", "2", "memory", "4Gi", "pods", "30").
		Taint(corev1.Taint{Key: "example.com/reserved", Effect: corev1.TaintEffectNoSchedule}).Obj()
	filler := test.MakePod(name+"-filler").Label("app", "filler").Requests("cpu", "1", "memory", "2Gi").Obj()
	return existingNode(n, filler)
}

// optimumPending is how many of lp's pods the best packing leaves pending:
// an exhaustive search over assignments of pods to nodes, each node on the
// type of least capacity that holds it, within the cpu and node room.
func (lp *limitedPool) optimumPending() int {
	pods := slices.Clone(lp.pods)
	sort.SliceStable(pods, func(i, j int) bool { return pods[i].req[0] > pods[j].req[0] })
	type bin struct {
		used scheduling.Vector
		cost int64
		anti map[string]bool
	}
	best := 0
	var bins []*bin
	var cost int64
	cheapest := func(used scheduling.Vector) int64 {
		least := int64(-1)
		for _, ty := range lp.types {
			if used.Fits(ty.room) && (least < 0 || ty.capCPU < least) {
				least = ty.capCPU
			}
		}
		return least
	}
	var search func(i, placed int)
	search = func(i, placed int) {
		if placed > best {
			best = placed
		}
		if i == len(pods) || placed+len(pods)-i <= best {
			return
		}
		p := pods[i]
		for _, b := range bins {
			if p.anti != "" && b.anti[p.anti] {
				continue
			}
			next := b.used.Clone()
			next.Add(p.req)
			c := cheapest(next)
			if c < 0 || cost-b.cost+c > lp.cpuRoom {
				continue
			}
			old, oldUsed := b.cost, b.used
			cost += c - old
			b.cost, b.used = c, next
			if p.anti != "" {
				b.anti[p.anti] = true
			}
			search(i+1, placed+1)
			if p.anti != "" {
				delete(b.anti, p.anti)
			}
			b.cost, b.used = old, oldUsed
			cost -= c - old
		}
		if lp.nodeRoom < 0 || len(bins) < lp.nodeRoom {
			if c := cheapest(p.req); c >= 0 && cost+c <= lp.cpuRoom {
				b := &bin{used: p.req.Clone(), cost: c, anti: map[string]bool{}}
				if p.anti != "" {
					b.anti[p.anti] = true
				}
				bins = append(bins, b)
				cost += c
				search(i+1, placed+1)
				cost -= c
				bins = bins[:len(bins)-1]
			}
		}
		search(i+1, placed)
	}
	search(0, 0)
	return len(pods) - best
}

// checkNoRoomLeft checks that no pod only lp can take is pending while the
// room its limits leave (after the new NodeClaims' largest listed types)
// would hold it on a node of its own: room compaction gave back is used
// again in the same solve.
func (lp *limitedPool) checkNoRoomLeft(t *testing.T, res *Result) {
	t.Helper()
	cpuRoom, nodeRoom := lp.cpuRoom, lp.nodeRoom
	for _, nc := range res.NodeClaims {
		if nc.NodePool.Name == lp.name {
			most := MaximumCapacity(nc.InstanceTypes)
			cpuRoom -= most.Cpu().MilliValue()
			nodeRoom--
		}
	}
	if lp.nodeRoom >= 0 && nodeRoom <= 0 {
		return
	}
	for _, pe := range res.PodErrors {
		if pe.Pod.Spec.NodeSelector[karpv1.NodePoolLabelKey] != lp.name {
			continue
		}
		req := scheduling.Vector{pe.Pod.Spec.Containers[0].Resources.Requests.Cpu().MilliValue(),
			pe.Pod.Spec.Containers[0].Resources.Requests.Memory().Value(), 1}
		for _, ty := range lp.types {
			if ty.capCPU <= cpuRoom && req.Fits(ty.room) {
				t.Errorf("pod %s pending (%s) while %dm cpu of NodePool %s's limit is left, enough for a node of %dm",
					pe.Pod.Name, pe.Status.Message(), cpuRoom, lp.name, ty.capCPU)
				break
			}
		}
	}
}

// limitReasonRE matches the reason a limit gives a pod: the NodePool, the
// limit and what is in use.
var limitReasonRE = regexp.MustCompile(`NodePool (\S+): limit (\S+)=(\S+) reached \((\S+) in use\)`)

// checkLimitAccounting checks that a solve's limit accounting equals what
// its NodeClaims hold: each limited NodePool's existing capacity plus the
// largest listed type of each new NodeClaim stays within the limit, a pod a
// limit kept out is told exactly that usage, and admitting the NodeClaims
// (as the provisioner and karp simulate do) drops or narrows none.
func checkLimitAccounting(t *testing.T, in Input, res *Result) {
	t.Helper()
	used := map[string]corev1.ResourceList{}
	for _, np := range in.NodePools {
		if len(np.NodePool.Spec.Limits) == 0 {
			continue
		}
		name := np.NodePool.Name
		u := corev1.ResourceList{}
		nodes := int64(0)
		for _, n := range in.Nodes {
			if n.Labels[karpv1.NodePoolLabelKey] == name {
				addResources(u, n.Capacity)
				nodes++
			}
		}
		for _, nc := range res.NodeClaims {
			if nc.NodePool.Name == name {
				addResources(u, MaximumCapacity(nc.InstanceTypes))
				nodes++
			}
		}
		u["nodes"] = *resource.NewQuantity(nodes, resource.DecimalSI)
		used[name] = u
		for res, limit := range np.NodePool.Spec.Limits {
			if q := u[res]; q.Cmp(limit) > 0 {
				t.Errorf("NodePool %s: %s %s with the largest listed types, over the limit %s", name, res, q.String(), limit.String())
			}
		}
	}
	for _, pe := range res.PodErrors {
		for _, m := range limitReasonRE.FindAllStringSubmatch(pe.Status.Message(), -1) {
			u, ok := used[m[1]]
			if !ok {
				t.Errorf("pod %s: reason %q names a NodePool without limits", pe.Pod.Name, m[0])
				continue
			}
			inUse, q := resource.MustParse(m[4]), u[corev1.ResourceName(m[2])]
			if inUse.Cmp(q) != 0 {
				t.Errorf("pod %s: told %q, the NodeClaims and nodes hold %s", pe.Pod.Name, m[0], q.String())
			}
		}
	}
	admitted := *res
	admitted.NodeClaims = slices.Clone(res.NodeClaims)
	admitted.Order = slices.Clone(res.Order)
	admitted.PodErrors = slices.Clone(res.PodErrors)
	AdmitLimits(in, &admitted)
	if len(admitted.NodeClaims) != len(res.NodeClaims) {
		t.Fatalf("admission dropped %d of %d NodeClaims", len(res.NodeClaims)-len(admitted.NodeClaims), len(res.NodeClaims))
	}
	for i, nc := range admitted.NodeClaims {
		if len(nc.InstanceTypes) != len(res.NodeClaims[i].InstanceTypes) {
			t.Errorf("admission narrowed NodeClaim %d from %d to %d types", i, len(res.NodeClaims[i].InstanceTypes), len(nc.InstanceTypes))
		}
	}
}

// TestFlexiblePodsNotStrandedByALimit: a pod that the unlimited NodePool
// can take never stays pending because a higher-weight limited NodePool is
// full, once the NodeClaims are admitted against the limits as the
// provisioner and karp simulate admit them. (Before, a NodeClaim that
// listed types beyond the limit's room was dropped at admission, and its
// pods were told only "limit cpu=... would be exceeded".)
func TestFlexiblePodsNotStrandedByALimit(t *testing.T) {
	for seed := int64(1); seed <= 400; seed++ {
		bc := randomBindingCluster(rand.New(rand.NewSource(seed)))
		res := Solve(t.Context(), bc.in)
		AdmitLimits(bc.in, res)
		for _, pe := range res.PodErrors {
			if pe.Pod.Spec.NodeSelector[karpv1.NodePoolLabelKey] == "" {
				t.Errorf("seed %d: flexible pod %s pending: %s", seed, pe.Pod.Name, pe.Status.Message())
			}
		}
	}
}

// TestLimitAccountingMatchesNodeClaims: what a limit tells a pending pod is
// in use is what the NodeClaims can launch with their largest listed type,
// so no listed type may use room a refused pod was told is taken; with no
// pod refused, the room left lets NodeClaims list larger types, shared so
// that their sum stays within the limit.
func TestLimitAccountingMatchesNodeClaims(t *testing.T) {
	c4 := makeType("c-4", "amd64", 0.20, "cpu", "4", "memory", "16Gi", "pods", "20")
	c5 := makeType("c-5", "amd64", 0.25, "cpu", "5", "memory", "16Gi", "pods", "20")
	limited := func() *NodePool {
		return withTypes(test.MakeNodePool("limited").Limits(test.ResourceList("cpu", "10")).Obj(), c4, c5)
	}
	only := func(w *test.PodWrapper) *test.PodWrapper { return w.Requests("cpu", "3") }
	runCases(t, map[string]solveCase{
		"a refused pod is told the capacity the NodeClaims list": {
			pools:   []*NodePool{limited()},
			pods:    pods("p", 3, only),
			reasons: map[string]string{"p-2": "NodePool limited: limit cpu=10 reached (8 in use) [NodePoolLimit]"},
			check: func(t *testing.T, res *Result) {
				if len(res.NodeClaims) != 2 {
					t.Fatalf("%d NodeClaims, want 2", len(res.NodeClaims))
				}
				for _, nc := range res.NodeClaims {
					if len(nc.InstanceTypes) != 1 || nc.InstanceTypes[0].Name != "c-4" {
						t.Errorf("NodeClaim lists %s, want c-4 alone", typeName(nc))
					}
				}
			},
		},
		"with no pod refused, the room left is shared among the NodeClaims": {
			pools: []*NodePool{limited()},
			pods:  pods("p", 2, only),
			check: func(t *testing.T, res *Result) {
				if len(res.NodeClaims) != 2 || len(res.PodErrors) != 0 {
					t.Fatalf("%d NodeClaims and %d pods pending, want 2 and 0", len(res.NodeClaims), len(res.PodErrors))
				}
				for _, nc := range res.NodeClaims {
					if len(nc.InstanceTypes) != 2 {
						t.Errorf("NodeClaim lists %d types, want c-4 and c-5 (10 cpu at most for both)", len(nc.InstanceTypes))
					}
				}
			},
		},
	})
	for seed := int64(1); seed <= 400; seed++ {
		bc := randomBindingCluster(rand.New(rand.NewSource(seed)))
		checkLimitAccounting(t, bc.in, Solve(t.Context(), bc.in))
	}
}
