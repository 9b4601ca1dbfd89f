package simulation

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// limitedCluster is a random cluster whose NodePools have tight cpu (and
// sometimes memory and node) limits, and whose instance types reserve part
// of their capacity (now and then allocating more than their capacity, a
// shape the bound must survive too), so limits bind on most seeds.
func limitedCluster(seed int64) Input {
	rng := rand.New(rand.NewSource(seed))
	in := randomCluster(rng)
	for _, np := range in.NodePools {
		np.NodePool.Spec.Weight = ptr.To(int32(rng.Intn(10)))
		np.NodePool.Spec.Limits = karpv1.Limits(test.ResourceList("cpu", fmt.Sprint(2+rng.Intn(14))))
		if rng.Intn(3) == 0 {
			np.NodePool.Spec.Limits[corev1.ResourceMemory] = resource.MustParse(fmt.Sprintf("%dGi", 4+rng.Intn(40)))
		}
		if rng.Intn(4) == 0 {
			np.NodePool.Spec.Limits["nodes"] = resource.MustParse(fmt.Sprint(1 + rng.Intn(4)))
		}
		for _, it := range np.InstanceTypes {
			it.Allocatable = it.Capacity.DeepCopy()
			cpu, mem := it.Allocatable[corev1.ResourceCPU], it.Allocatable[corev1.ResourceMemory]
			reserveCPU := resource.NewMilliQuantity(int64(rng.Intn(400)), resource.DecimalSI)
			reserveMem := resource.NewQuantity(int64(rng.Intn(1024))<<20, resource.BinarySI)
			if rng.Intn(10) == 0 {
				cpu.Add(*reserveCPU)
			} else {
				cpu.Sub(*reserveCPU)
				mem.Sub(*reserveMem)
			}
			it.Allocatable[corev1.ResourceCPU], it.Allocatable[corev1.ResourceMemory] = cpu, mem
		}
	}
	for _, p := range in.Pods {
		if rng.Intn(3) == 0 {
			if p.Spec.NodeSelector == nil {
				p.Spec.NodeSelector = map[string]string{}
			}
			p.Spec.NodeSelector[karpv1.NodePoolLabelKey] = in.NodePools[rng.Intn(len(in.NodePools))].NodePool.Name
		}
	}
	return in
}

// straightforward wraps a pod order so the solve runs without the limit
// shortcuts.
func straightforward(order func(*solver, []*podInfo)) func(*solver, []*podInfo) {
	return func(s *solver, pods []*podInfo) {
		s.noLimitBound = true
		order(s, pods)
	}
}

// TestLimitBoundKeepsDecisions: on random clusters with binding limits,
// both pod orders, with and without compaction, place every pod exactly as
// the straightforward solve does, which tries every instance type of every
// NodeClaim and explains afresh each time a new NodeClaim cannot hold a
// pod, and give pending pods the same reasons.
func TestLimitBoundKeepsDecisions(t *testing.T) {
	orders := map[string]func(*solver, []*podInfo){
		"largest-first":        func(_ *solver, pods []*podInfo) { sortPods(pods) },
		"least-flexible-first": (*solver).sortLeastFlexibleFirst,
	}
	pending := 0
	for seed := int64(1); seed <= 300; seed++ {
		for name, order := range orders {
			for _, compact := range []bool{false, true} {
				in := limitedCluster(seed)
				got := solveOrdered(t.Context(), in, compact, order)
				want := solveOrdered(t.Context(), in, compact, straightforward(order))
				if !reflect.DeepEqual(got, want) {
					t.Errorf("seed %d, %s, compact %v: the solve differs from the straightforward one (-want +got):\n%s",
						seed, name, compact, cmp.Diff(describeResult(want), describeResult(got)))
				}
				pending += len(got.PodErrors)
			}
		}
	}
	if pending == 0 {
		t.Fatal("no pod was left pending on any seed: the limits never bound, so nothing was compared")
	}
}

// describeResult is a readable summary of res for failure messages.
func describeResult(res *Result) []string {
	var out []string
	for i, nc := range res.NodeClaims {
		var pods []string
		for _, p := range nc.Pods {
			pods = append(pods, p.Name)
		}
		sort.Strings(pods)
		out = append(out, fmt.Sprintf("claim %d: %s %s %v", i, nc.NodePool.Name, nc.InstanceType.Name, pods))
	}
	for _, e := range res.ExistingNodes {
		out = append(out, fmt.Sprintf("existing %+v", *e))
	}
	for _, e := range res.PodErrors {
		out = append(out, fmt.Sprintf("pending %s: %s", e.Pod.Name, e.Status.Message()))
	}
	return out
}

// TestLimitExcludesIsSound: whenever limitExcludes refuses a NodeClaim (or
// a new one) for a pod variant, the straightforward search over every
// instance type finds none either; checked at the end of straightforward
// solves of random limited clusters, for every NodeClaim, pool and
// variant.
func TestLimitExcludesIsSound(t *testing.T) {
	excluded, kept := 0, 0
	for seed := int64(1); seed <= 300; seed++ {
		in := limitedCluster(seed)
		s := newSolver(&in)
		pods, _ := splitDRA(s.pendingPods())
		sortPods(pods)
		s.noLimitBound = true
		s.run(t.Context(), pods)
		check := func(what string, e *entry, tg *target, v *variant) {
			p := e.pool
			used := s.zero()
			var curCap scheduling.Vector
			if tg != nil {
				used, curCap = tg.used, p.types[tg.cur].capacity
			}
			s.noLimitBound = false
			out := s.limitExcludes(p, used, v.class.requests, curCap)
			s.noLimitBound = true
			cur := s.cheapestFit(e, tg, v)
			switch {
			case out && cur >= 0:
				t.Errorf("seed %d: %s: limitExcludes refuses a pod of %s, but type %s fits within the limits of NodePool %s",
					seed, what, strings.TrimSpace(v.reqs.String()), p.types[cur].it.Name, p.name)
			case out:
				excluded++
			case p.hasLimits:
				kept++
			}
		}
		for _, v := range s.variants {
			for _, tg := range s.claims {
				check(fmt.Sprintf("NodeClaim %d", tg.id), tg.entry, tg, v)
				if e := s.compatEntry(tg.entry, v); e != nil {
					check(fmt.Sprintf("NodeClaim %d (with the pod's requirements)", tg.id), e, tg, v)
				}
			}
			for pi := range s.pools {
				if pc := s.poolFor(v, pi); pc.entry != nil {
					check("a new NodeClaim of "+s.pools[pi].name, pc.entry, nil, v)
				}
			}
		}
	}
	if excluded == 0 || kept == 0 {
		t.Fatalf("limitExcludes refused %d and let through %d checks: the cases do not exercise both outcomes", excluded, kept)
	}
	t.Logf("limitExcludes refused %d checks and let through %d", excluded, kept)
}
