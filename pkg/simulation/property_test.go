package simulation

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestSolveRandomClusters generates clusters with random pods (requests,
// selectors, tolerations, spread, pod affinity and anti-affinity, host
// ports, preferences), NodePools (taints, labels, requirements, limits,
// weights), DaemonSets (requests or limits only, affinities, tolerations)
// and existing nodes, and checks that every placement satisfies every hard
// constraint and that no pod with a trivially feasible placement is left out.
func TestSolveRandomClusters(t *testing.T) {
	for seed := int64(1); seed <= 500; seed++ {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			in := randomCluster(rand.New(rand.NewSource(seed)))
			res := Solve(t.Context(), in)
			checkInvariants(t, in, res)
			checkNoneFeasibleLeftOut(t, in, res)
		})
	}
}

var apps = []string{"a", "b", "c", "d"}

func pick[T any](rng *rand.Rand, xs ...T) T { return xs[rng.Intn(len(xs))] }

func randomCluster(rng *rand.Rand) Input {
	in := Input{}
	if rng.Intn(2) == 0 {
		in.Options.PreferencePolicy = PreferencePolicyIgnore
	}
	for i := 0; i < 1+rng.Intn(3); i++ {
		in.NodePools = append(in.NodePools, randomPool(rng, i))
	}
	for i := 0; i < rng.Intn(4); i++ {
		in.DaemonSets = append(in.DaemonSets, randomDaemonSet(rng, i))
	}
	for i := 0; i < rng.Intn(4); i++ {
		in.Nodes = append(in.Nodes, randomNode(rng, i))
	}
	for i := 0; i < 10+rng.Intn(40); i++ {
		in.Pods = append(in.Pods, randomPod(rng, fmt.Sprintf("pod-%d", i)).Obj())
	}
	return in
}

func randomPool(rng *rand.Rand, i int) *NodePool {
	w := test.MakeNodePool(fmt.Sprintf("pool-%d", i))
	if rng.Intn(2) == 0 {
		w = w.Weight(int32(1 + rng.Intn(10)))
	}
	if rng.Intn(3) == 0 {
		w = w.Taint(corev1.Taint{Key: "dedicated", Value: fmt.Sprintf("pool-%d", i), Effect: pick(rng, corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute)})
	}
	if rng.Intn(3) == 0 {
		w = w.Labels(map[string]string{"team": pick(rng, "x", "y")})
	}
	if rng.Intn(5) == 0 {
		w = w.Taint(corev1.Taint{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule})
	}
	if rng.Intn(5) == 0 {
		w = w.Requirement("rack", corev1.NodeSelectorOpIn, "r1", "r2")
	}
	switch rng.Intn(4) {
	case 0:
		w = w.Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64")
	case 1:
		w = w.Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, pick(rng, zoneA, zoneB), zoneC)
	}
	if rng.Intn(4) == 0 {
		w = w.Limits(test.ResourceList("cpu", fmt.Sprint(8+rng.Intn(32))))
	}
	types := testTypes()
	if rng.Intn(4) == 0 {
		unavailable(types, pick(rng, "general-small", "arm-medium", "general-medium"))
	}
	return withTypes(w.Obj(), types...)
}

func randomDaemonSet(rng *rand.Rand, i int) *appsDaemonSet {
	w := test.MakeDaemonSet(fmt.Sprintf("ds-%d", i))
	cpu, mem := fmt.Sprintf("%dm", 100+100*rng.Intn(5)), fmt.Sprintf("%dMi", 128*(1+rng.Intn(4)))
	if rng.Intn(5) == 0 {
		w = w.Limits("cpu", cpu, "memory", mem)
	} else {
		w = w.Requests("cpu", cpu, "memory", mem)
	}
	switch rng.Intn(4) {
	case 0:
		w = w.NodeSelector(map[string]string{corev1.LabelArchStable: "arm64"})
	case 1:
		w = w.NodeAffinityTerm(req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "general-large", "memory-large"))
	}
	if rng.Intn(3) == 0 {
		w = w.Toleration(corev1.Toleration{Operator: corev1.TolerationOpExists})
	}
	if rng.Intn(8) == 0 {
		w = w.HostPort(int32(9100 + i))
	}
	return w.Obj()
}

func randomNode(rng *rand.Rand, i int) *Node {
	name := fmt.Sprintf("node-%d", i)
	nw := test.MakeNode(name).Label(corev1.LabelTopologyZone, pick(rng, zoneA, zoneB, zoneC)).
		Label(corev1.LabelArchStable, "amd64").Allocatable("cpu", "4", "memory", "8Gi", "pods", "20")
	if rng.Intn(2) == 0 {
		nw = nw.Label(karpv1.NodePoolLabelKey, "pool-0")
	}
	var bound []*corev1.Pod
	for j := 0; j < rng.Intn(3); j++ {
		bound = append(bound, test.MakePod(fmt.Sprintf("%s-bound-%d", name, j)).Label("app", pick(rng, apps...)).Requests("cpu", "500m").Obj())
	}
	n := existingNode(nw.Obj(), bound...)
	n.MarkedForDeletion = rng.Intn(6) == 0
	if rng.Intn(5) == 0 {
		n.Initialized = false
		n.Taints = []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}
	}
	return n
}

func randomPod(rng *rand.Rand, name string) *test.PodWrapper {
	app := pick(rng, apps...)
	own := map[string]string{"app": app}
	w := test.MakePod(name).Label("app", app).Requests("cpu", pick(rng, "100m", "250m", "500m", "1", "1500m", "3"),
		"memory", pick(rng, "128Mi", "512Mi", "1Gi", "2Gi", "6Gi"))
	if rng.Intn(10) == 0 {
		w = w.NodeSelector(map[string]string{corev1.LabelArchStable: "arm64"})
	}
	if rng.Intn(10) == 0 {
		w = w.NodeSelector(map[string]string{"team": "x"})
	}
	if rng.Intn(3) == 0 {
		w = w.Toleration(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists})
	}
	if rng.Intn(8) == 0 {
		w = w.InitContainer("init", test.ResourceList("cpu", pick(rng, "500m", "2")), rng.Intn(2) == 0)
	}
	switch rng.Intn(16) {
	case 0:
		w = w.Spread(corev1.LabelTopologyZone, int32(1+rng.Intn(2)), corev1.DoNotSchedule, own)
	case 1:
		w = w.Spread(corev1.LabelHostname, int32(1+rng.Intn(2)), corev1.DoNotSchedule, own)
	case 2:
		w = w.PodAntiAffinity(corev1.LabelHostname, own)
	case 3:
		w = w.PodAffinity(corev1.LabelTopologyZone, map[string]string{"app": pick(rng, apps...)})
	case 4:
		w = w.PreferredPodAntiAffinity(10, corev1.LabelHostname, own)
	case 5:
		w = w.Spread(corev1.LabelTopologyZone, 1, corev1.ScheduleAnyway, own)
	case 6:
		w = w.PreferredNodeAffinity(10, req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, pick(rng, zoneA, zoneB)))
	case 7:
		w = w.PodAntiAffinity(corev1.LabelTopologyZone, map[string]string{"app": pick(rng, apps...)})
	case 8:
		ignore, honor := corev1.NodeInclusionPolicyIgnore, corev1.NodeInclusionPolicyHonor
		w = w.NodeSelector(map[string]string{corev1.LabelArchStable: "amd64"}).SpreadConstraint(corev1.TopologySpreadConstraint{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: own}, NodeAffinityPolicy: pick(rng, &ignore, &honor), NodeTaintsPolicy: pick(rng, &ignore, &honor)})
	case 9:
		w = w.PreferredPodAffinity(10, corev1.LabelHostname, map[string]string{"app": pick(rng, apps...)})
	case 10:
		w = w.Spread("rack", 1, corev1.DoNotSchedule, own)
	case 11:
		w = w.PodAffinity(corev1.LabelHostname, map[string]string{"app": pick(rng, apps...)})
	}
	if rng.Intn(8) == 0 {
		w = w.HostPort(8080)
	}
	return w
}

// checkNoneFeasibleLeftOut fails when a pod without topology constraints,
// host ports or anti-affinity aimed at it is unplaced although some NodePool
// without limits tolerates it, is compatible with it, and has an instance
// type that holds it next to the DaemonSets landing there.
func checkNoneFeasibleLeftOut(t *testing.T, in Input, res *Result) {
	t.Helper()
	wellKnown := karpv1.WellKnownLabels.Clone()
	for _, np := range in.NodePools {
		for _, it := range np.InstanceTypes {
			for k := range it.Requirements {
				wellKnown.Insert(k)
			}
		}
	}
	for _, pe := range res.PodErrors {
		p := pe.Pod
		if hasTopology(p) || len(scheduling.PodHostPorts(p)) > 0 || targetedByAnti(in, p) {
			continue
		}
		for _, np := range in.NodePools {
			if it := trivialFit(in, np, p, wellKnown); it != "" {
				t.Errorf("pod %s unplaced (%s) but fits a new %s node of NodePool %s", p.Name, pe.Status.Message(), it, np.NodePool.Name)
			}
		}
	}
}

func hasTopology(p *corev1.Pod) bool {
	a := p.Spec.Affinity
	return len(p.Spec.TopologySpreadConstraints) > 0 || a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil)
}

func targetedByAnti(in Input, p *corev1.Pod) bool {
	var all []*corev1.Pod
	all = append(all, in.Pods...)
	for _, n := range in.Nodes {
		all = append(all, n.Pods...)
	}
	for _, q := range all {
		if q.Spec.Affinity == nil || q.Spec.Affinity.PodAntiAffinity == nil {
			continue
		}
		for _, term := range q.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if termMatcher(q, term)(p) {
				return true
			}
		}
	}
	return false
}

func trivialFit(in Input, np *NodePool, p *corev1.Pod, wellKnown sets.Set[string]) string {
	pool := np.NodePool
	if len(pool.Spec.Limits) > 0 || scheduling.Taints(pool.Spec.Template.Spec.Taints).ToleratesPod(p.Spec.Tolerations) != nil {
		return ""
	}
	poolReqs := poolRequirements(pool)
	for _, term := range podNodeTerms(in, p) {
		if poolReqs.Compatible(term, wellKnown) != nil {
			continue
		}
		reqs := poolReqs.Intersection(term)
		for _, it := range np.InstanceTypes {
			if reqs.Intersects(it.Requirements) != nil {
				continue
			}
			if _, ok := it.CheapestOffering(reqs); !ok {
				continue
			}
			nodeLabels := map[string]string{karpv1.NodePoolLabelKey: pool.Name}
			for k, v := range pool.Spec.Template.ObjectMeta.Labels {
				nodeLabels[k] = v
			}
			for k, v := range it.Requirements.Labels() {
				nodeLabels[k] = v
			}
			need := scheduling.PodRequests(scheduling.WithLimitRangeDefaults(p, in.LimitRanges))
			over, _ := daemonOverhead(in, nodeLabels, pool.Spec.Template.Spec.Taints, nil)
			addList(need, over)
			if fitsList(need, it.Allocatable) {
				return it.Name
			}
		}
	}
	return ""
}

func fitsList(need, alloc corev1.ResourceList) bool {
	for name, q := range need {
		if a := alloc[name]; !q.IsZero() && q.Cmp(a) > 0 {
			return false
		}
	}
	return true
}

// TestWellKnownLabelsPassedInSolveAlike: a caller that computes
// WellKnownLabelsOf once and passes it in Options (a disruption pass does,
// for all its what-ifs) gets the solve it would get with the default, and
// the set holds the label keys the pools' instance types define, a custom
// one among them.
func TestWellKnownLabelsPassedInSolveAlike(t *testing.T) {
	sawRack := false
	for seed := int64(1); seed <= 150; seed++ {
		in := randomCluster(rand.New(rand.NewSource(seed)))
		if seed%2 == 0 {
			// A label only the instance types define (pods may not
			// select it: the solve must treat it alike either way).
			for _, it := range in.NodePools[0].InstanceTypes {
				it.Requirements.Add(scheduling.NewRequirement("example.com/rack", corev1.NodeSelectorOpIn, "r1"))
			}
		}
		given := in
		given.Options.WellKnownLabels = WellKnownLabelsOf(in.NodePools)
		if !given.Options.WellKnownLabels.HasAll(sets.List(karpv1.WellKnownLabels)...) {
			t.Fatalf("seed %d: WellKnownLabelsOf lacks karp's well-known labels", seed)
		}
		for _, np := range in.NodePools {
			for _, it := range np.InstanceTypes {
				for k := range it.Requirements {
					if !given.Options.WellKnownLabels.Has(k) {
						t.Fatalf("seed %d: WellKnownLabelsOf lacks %s, a label of instance type %s", seed, k, it.Name)
					}
					sawRack = sawRack || k == "example.com/rack"
				}
			}
		}
		if a, b := solveSummary(Solve(t.Context(), in)), solveSummary(Solve(t.Context(), given)); a != b {
			t.Errorf("seed %d: the solve differs with the labels passed in:\n%s\nvs\n%s", seed, a, b)
		}
	}
	if !sawRack {
		t.Error("no instance type was labelled example.com/rack: the check of custom labels never ran")
	}
}

// solveSummary is what a solve decided, as text: each NodeClaim's pool,
// instance type, price and pods, each existing node's pods, each pod left
// out and why.
func solveSummary(res *Result) string {
	var b strings.Builder
	for _, nc := range res.NodeClaims {
		fmt.Fprintf(&b, "claim %s %s %.4f:", nc.NodePool.Name, nc.InstanceType.Name, nc.Price)
		for _, p := range nc.Pods {
			b.WriteString(" " + p.Name)
		}
		b.WriteString("\n")
	}
	for _, ep := range res.ExistingNodes {
		fmt.Fprintf(&b, "node %s:", ep.Node.Name)
		for _, p := range ep.Pods {
			b.WriteString(" " + p.Name)
		}
		b.WriteString("\n")
	}
	for _, pe := range res.PodErrors {
		fmt.Fprintf(&b, "unplaced %s: %s\n", pe.Pod.Name, pe.Status.Message())
	}
	return b.String()
}
