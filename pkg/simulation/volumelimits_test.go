package simulation

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
)

const ebs = "ebs.csi.aws.com"

// claimPod is a pod asking for cpu that attaches the named claims of the
// EBS CSI driver; volumes records them as the caller would resolve them.
func claimPod(volumes map[types.UID]scheduling.Volumes, name, cpu string, claims ...string) *corev1.Pod {
	pod := test.MakePod(name).Requests("cpu", cpu).Obj()
	v := scheduling.Volumes{}
	for _, c := range claims {
		v.Add(ebs, scheduling.ClaimKey(pod.Namespace, c))
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: c,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	volumes[pod.UID] = v
	return pod
}

// limitedNode is a 4-cpu node of NodePool "default" whose CSINode allows
// limit EBS volumes.
func limitedNode(name string, limit int, pods ...*corev1.Pod) *Node {
	n := existingNode(test.MakeNode(name).Labels(map[string]string{"karpenter.sh/nodepool": "default"}).
		Capacity("cpu", "4", "memory", "8Gi", "pods", "20").Allocatable("cpu", "4", "memory", "8Gi", "pods", "20").Obj(), pods...)
	n.VolumeLimits = scheduling.VolumeLimits{ebs: limit}
	return n
}

func TestSolveKeepsNodesWithinTheirVolumeLimits(t *testing.T) {
	cases := map[string]func(vols map[types.UID]scheduling.Volumes) solveCase{
		"a node at its limit takes no pod with a new claim, but pods without claims": func(vols map[types.UID]scheduling.Volumes) solveCase {
			return solveCase{
				nodes:  []*Node{limitedNode("full", 2, claimPod(vols, "db-0", "100m", "data-0"), claimPod(vols, "db-1", "100m", "data-1"))},
				pods:   []*corev1.Pod{claimPod(vols, "db-2", "100m", "data-2"), test.MakePod("web").Requests("cpu", "100m").Obj()},
				claims: n(1), onNode: map[string]string{"web": "full"},
			}
		},
		"room for one more claim: one pod stays, the next goes to a new node": func(vols map[types.UID]scheduling.Volumes) solveCase {
			return solveCase{
				nodes:  []*Node{limitedNode("room", 2, claimPod(vols, "db-0", "100m", "data-0"))},
				pods:   []*corev1.Pod{claimPod(vols, "db-1", "100m", "data-1"), claimPod(vols, "db-2", "100m", "data-2")},
				claims: n(1), check: onePodOn("room", "db-1", "db-2"),
			}
		},
		"a pod with two new claims does not fit where one would": func(vols map[types.UID]scheduling.Volumes) solveCase {
			return solveCase{
				nodes:  []*Node{limitedNode("room", 2, claimPod(vols, "db-0", "100m", "data-0"))},
				pods:   []*corev1.Pod{claimPod(vols, "db-1", "100m", "data-1", "logs-1")},
				claims: n(1),
			}
		},
		"a claim already attached on the node adds nothing": func(vols map[types.UID]scheduling.Volumes) solveCase {
			return solveCase{
				nodes:  []*Node{limitedNode("full", 1, claimPod(vols, "writer", "100m", "shared"))},
				pods:   []*corev1.Pod{claimPod(vols, "reader", "100m", "shared")},
				claims: n(0), onNode: map[string]string{"reader": "full"},
			}
		},
		"the pod goes to the node that still has room": func(vols map[types.UID]scheduling.Volumes) solveCase {
			return solveCase{
				nodes:  []*Node{limitedNode("a-full", 1, claimPod(vols, "db-0", "100m", "data-0")), limitedNode("b-room", 2)},
				pods:   []*corev1.Pod{claimPod(vols, "db-1", "100m", "data-1")},
				claims: n(0), onNode: map[string]string{"db-1": "b-room"},
			}
		},
		"another driver's limit does not apply": func(vols map[types.UID]scheduling.Volumes) solveCase {
			node := limitedNode("full", 1, claimPod(vols, "db-0", "100m", "data-0"))
			node.VolumeLimits = scheduling.VolumeLimits{"efs.csi.aws.com": 0}
			return solveCase{nodes: []*Node{node}, pods: []*corev1.Pod{claimPod(vols, "db-1", "100m", "data-1")},
				claims: n(0), onNode: map[string]string{"db-1": "full"}}
		},
		"a node without a CSINode is not limited": func(vols map[types.UID]scheduling.Volumes) solveCase {
			node := limitedNode("unknown", 1, claimPod(vols, "db-0", "100m", "data-0"))
			node.VolumeLimits = nil
			return solveCase{nodes: []*Node{node}, pods: []*corev1.Pod{claimPod(vols, "db-1", "100m", "data-1")},
				claims: n(0), onNode: map[string]string{"db-1": "unknown"}}
		},
		"pods of a node being deleted count where they land": func(vols map[types.UID]scheduling.Volumes) solveCase {
			gone := limitedNode("gone", 4, claimPod(vols, "db-0", "100m", "data-0"), claimPod(vols, "db-1", "100m", "data-1"))
			gone.MarkedForDeletion = true
			return solveCase{nodes: []*Node{gone, limitedNode("room", 1)},
				claims: n(1), check: onePodOn("room", "db-0", "db-1")}
		},
	}
	names := make([]string, 0, len(cases))
	for name := range cases {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			vols := map[types.UID]scheduling.Volumes{}
			tc := cases[name](vols)
			in := tc.input()
			in.PodVolumes = vols
			res := Solve(t.Context(), in)
			checkInvariants(t, in, res)
			tc.assert(t, res)
		})
	}
}

// onePodOn checks that exactly one of the pods landed on the node.
func onePodOn(node string, pods ...string) func(t *testing.T, res *Result) {
	return func(t *testing.T, res *Result) {
		t.Helper()
		loc := where(res)
		on := 0
		for _, p := range pods {
			if loc[p] == "node-"+node {
				on++
			}
		}
		if on != 1 {
			t.Errorf("%d of %v on node %s (placements %v), want exactly one", on, pods, node, loc)
		}
	}
}

// A consolidation moves a pod onto another node only within that node's
// volume limits, counting the pending pods it reserves room for.
func TestConsolidateRespectsVolumeLimits(t *testing.T) {
	small := makeType("general-small", "amd64", 0.10, "cpu", "2", "memory", "4Gi", "pods", "10")
	big := makeType("general-huge", "amd64", 1.00, "cpu", "8", "memory", "16Gi", "pods", "40")
	pool := withTypes(test.MakeNodePool("default").Obj(), onDemandOnly([]*scheduling.InstanceType{small, big})...)
	limited := func(n *Node, limit int) *Node {
		n.VolumeLimits = scheduling.VolumeLimits{ebs: limit}
		return n
	}
	cases := map[string]struct {
		limit   int
		pending bool
		want    ConsolidationDecision
	}{
		"room for the claim: the candidate is deleted":           {limit: 2, want: ConsolidationDelete},
		"the other node is at its limit: replaced instead":       {limit: 1, want: ConsolidationReplace},
		"a pending pod takes the last attachment: replaced":      {limit: 2, pending: true, want: ConsolidationReplace},
		"unlimited other driver: deleted even with pending pods": {limit: -1, pending: true, want: ConsolidationDelete},
	}
	// Node b sorts before the candidate z, so a pending pod is reserved
	// on b.
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			vols := map[types.UID]scheduling.Volumes{}
			other := poolNode("b", big, claimPod(vols, "db-0", "500m", "data-0"))
			if tc.limit >= 0 {
				other = limited(other, tc.limit)
			}
			in := Input{NodePools: []*NodePool{pool}, PodVolumes: vols,
				Nodes: []*Node{other, poolNode("z", big, claimPod(vols, "db-1", "500m", "data-1"))}}
			if tc.pending {
				in.Pods = []*corev1.Pod{claimPod(vols, "db-2", "500m", "data-2")}
			}
			got := Consolidate(t.Context(), in, []ConsolidationCandidate{{Name: "z", Price: 1.00}}, ConsolidationOptions{RequireCheaper: true})
			if got.Decision != tc.want {
				t.Fatalf("decision %s (%s), want %s", got.Decision, got.Reason, tc.want)
			}
			if tc.want == ConsolidationReplace && where(got.Result)["db-1"] == "node-b" {
				t.Errorf("db-1 moved onto node b, over its volume limit")
			}
		})
	}
}

// checkVolumeLimits replays the placements onto existing nodes with
// volume limits: no pod may bring a claim of a limited driver that takes
// the node over its limit.
func checkVolumeLimits(in Input, res *Result) []string {
	attached := map[*Node]map[string]map[string]bool{} // node -> driver -> claims
	claimsOn := func(n *Node) map[string]map[string]bool {
		if attached[n] == nil {
			attached[n] = map[string]map[string]bool{}
			for _, p := range n.Pods {
				if !terminal(p) {
					addClaims(attached[n], in.PodVolumes[p.UID])
				}
			}
		}
		return attached[n]
	}
	var errs []string
	for _, pl := range res.Order {
		n := pl.Node
		if pl.NodeClaim >= 0 || n.VolumeLimits == nil {
			continue
		}
		have := claimsOn(n)
		for driver, claims := range in.PodVolumes[pl.Pod.UID] {
			limit, ok := n.VolumeLimits[driver]
			added := 0
			for c := range claims {
				if !have[driver][c] {
					added++
				}
			}
			if ok && added > 0 && len(have[driver])+added > limit {
				errs = append(errs, fmt.Sprintf("pod %s on node %s: %d volumes of %s, limit %d", pl.Pod.Name, n.Name, len(have[driver])+added, driver, limit))
			}
		}
		addClaims(have, in.PodVolumes[pl.Pod.UID])
	}
	return errs
}

func addClaims(into map[string]map[string]bool, vols scheduling.Volumes) {
	for driver, claims := range vols {
		if into[driver] == nil {
			into[driver] = map[string]bool{}
		}
		for c := range claims {
			into[driver][c] = true
		}
	}
}

// The solver's check on interned ids (volumesFit) is the rule
// scheduling.VolumeLimits.ExceededBy states, on random nodes and pods:
// limits of some drivers, claims attached (possibly over a limit), a pod's
// claims (possibly attached already, possibly of unlimited drivers); and
// after the pod is attached, the node's claims are the union.
func TestVolumesFitAgreesWithExceededBy(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	drivers := []string{"a.csi", "b.csi", "c.csi"}
	randomVolumes := func(most int) scheduling.Volumes {
		v := scheduling.Volumes{}
		for range rng.Intn(most + 1) {
			v.Add(drivers[rng.Intn(len(drivers))], fmt.Sprintf("ns/claim-%d", rng.Intn(6)))
		}
		return v
	}
	for i := range 3000 {
		limits := scheduling.VolumeLimits{}
		for _, d := range drivers {
			if rng.Intn(3) > 0 {
				limits[d] = rng.Intn(4)
			}
		}
		used, add, next := randomVolumes(5), randomVolumes(3), randomVolumes(3)
		bound, pending, later := test.MakePod("bound").Obj(), test.MakePod("pending").Obj(), test.MakePod("later").Obj()
		in := Input{Nodes: []*Node{{Name: "n", Initialized: true, VolumeLimits: limits, Pods: []*corev1.Pod{bound}}},
			PodVolumes: map[types.UID]scheduling.Volumes{bound.UID: used, pending.UID: add, later.UID: next}}
		s := newSolver(&in)
		s.addExisting()
		node := s.existing[0]
		fits := func(pod *corev1.Pod) bool {
			cs := s.podClaims(&podInfo{pod: pod})
			return cs == nil || s.volumesFit(node, cs)
		}
		_, exceeded := limits.ExceededBy(used, add)
		if got := fits(pending); got == exceeded {
			t.Fatalf("case %d: limits %v, attached %v, pod %v: volumesFit = %v, ExceededBy = %v", i, limits, used, add, got, exceeded)
		}
		if exceeded {
			continue
		}
		s.attach(node, s.podClaims(&podInfo{pod: pending}))
		union := scheduling.Volumes{}
		union.Insert(used)
		union.Insert(add)
		_, exceeded = limits.ExceededBy(union, next)
		if got := fits(later); got == exceeded {
			t.Fatalf("case %d, after attaching %v: limits %v, attached %v, pod %v: volumesFit = %v, ExceededBy = %v",
				i, add, limits, union, next, got, exceeded)
		}
	}
}
