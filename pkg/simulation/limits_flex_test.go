package simulation

import (
	"fmt"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestLimitedPoolServesLeastFlexibleFirst: when a NodePool's limit binds,
// the pods that can only run there get its room before larger pods that
// another NodePool can take (placing by size alone leaves one pending).
func TestLimitedPoolServesLeastFlexibleFirst(t *testing.T) {
	onlyLimited := map[string]string{karpv1.NodePoolLabelKey: "limited"}
	runCases(t, map[string]solveCase{
		"pods with no alternative get the limited pool's room": {
			pools: []*NodePool{withTypes(test.MakeNodePool("limited").Weight(10).Limits(test.ResourceList("cpu", "4")).Obj()),
				withTypes(test.MakeNodePool("other").Weight(1).Obj())},
			pods: list(pods("flex", 2, func(w *test.PodWrapper) *test.PodWrapper { return w.Requests("cpu", "1500m") }),
				pods("only", 2, func(w *test.PodWrapper) *test.PodWrapper {
					return w.Requests("cpu", "1").NodeSelector(onlyLimited)
				})),
			inPool: map[string]string{"only-0": "limited", "only-1": "limited", "flex-1": "other"},
			check: func(t *testing.T, res *Result) {
				if len(res.PodErrors) != 0 {
					t.Errorf("%d pods pending, want none", len(res.PodErrors))
				}
			},
		},
		"without a binding limit pods keep the usual order": {
			pools: []*NodePool{withTypes(test.MakeNodePool("limited").Weight(10).Limits(test.ResourceList("cpu", "100")).Obj()),
				withTypes(test.MakeNodePool("other").Weight(1).Obj())},
			pods: list(pods("flex", 2, func(w *test.PodWrapper) *test.PodWrapper { return w.Requests("cpu", "1500m") }),
				pods("only", 2, func(w *test.PodWrapper) *test.PodWrapper {
					return w.Requests("cpu", "1").NodeSelector(onlyLimited)
				})),
			inPool: map[string]string{"only-0": "limited", "only-1": "limited", "flex-0": "limited", "flex-1": "limited"},
		},
	})
}

// costFactor bounds what karp may pay over the least-flexible-first
// baseline when both leave the same number of pods pending: none, since
// karp keeps the cheaper of its two orders.
const costFactor = 1.0

// TestLimitedPoolsRandomClusters: over random clusters whose NodePools are
// weighted and limited, karp never leaves more pods pending than placing
// the least flexible pods first, never pays more than costFactor times
// that baseline for as many placements, and once admitted no NodeClaim can
// push a NodePool over a limit whichever listed type the provider launches.
func TestLimitedPoolsRandomClusters(t *testing.T) {
	for seed := int64(1); seed <= 300; seed++ {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			in := randomCluster(rng)
			for _, np := range in.NodePools {
				np.NodePool.Spec.Weight = ptr.To(int32(rng.Intn(10)))
				np.NodePool.Spec.Limits = karpv1.Limits(test.ResourceList("cpu", fmt.Sprint(2+rng.Intn(12))))
				if rng.Intn(3) == 0 {
					np.NodePool.Spec.Limits["nodes"] = resource.MustParse(fmt.Sprint(1 + rng.Intn(3)))
				}
			}
			// Some pods can only use one NodePool.
			for _, p := range in.Pods {
				if rng.Intn(3) == 0 {
					if p.Spec.NodeSelector == nil {
						p.Spec.NodeSelector = map[string]string{}
					}
					p.Spec.NodeSelector[karpv1.NodePoolLabelKey] = in.NodePools[rng.Intn(len(in.NodePools))].NodePool.Name
				}
			}
			res := Solve(t.Context(), in)
			checkInvariants(t, in, res)
			base := solveOrdered(t.Context(), in, true, (*solver).sortLeastFlexibleFirst)
			if len(res.PodErrors) > len(base.PodErrors) {
				t.Fatalf("%d pods pending, least-flexible-first leaves %d", len(res.PodErrors), len(base.PodErrors))
			}
			if len(res.PodErrors) == len(base.PodErrors) && totalPrice(res) > costFactor*totalPrice(base)+1e-9 {
				t.Errorf("costs %.3f/h, least-flexible-first %.3f/h for as many placements", totalPrice(res), totalPrice(base))
			}
			AdmitLimits(in, res)
			checkWorstCaseLimits(t, in, res)
		})
	}
}

// checkWorstCaseLimits checks that every NodePool with new NodeClaims stays
// within its limits when each NodeClaim launches its largest listed type.
func checkWorstCaseLimits(t *testing.T, in Input, res *Result) {
	t.Helper()
	for _, np := range in.NodePools {
		used := corev1.ResourceList{}
		nodes := int64(0)
		for _, n := range in.Nodes {
			if n.Labels[karpv1.NodePoolLabelKey] == np.NodePool.Name {
				addResources(used, n.Capacity)
				nodes++
			}
		}
		before := used.DeepCopy()
		added := false
		for _, nc := range res.NodeClaims {
			if nc.NodePool.Name == np.NodePool.Name {
				added = true
				nodes++
				addResources(used, MaximumCapacity(nc.InstanceTypes))
			}
		}
		if !added {
			continue
		}
		for name, limit := range np.NodePool.Spec.Limits {
			if name == "nodes" {
				if nodes > limit.Value() {
					t.Errorf("NodePool %s: %d nodes > limit %s", np.NodePool.Name, nodes, limit.String())
				}
				continue
			}
			u := used[name]
			if b := before[name]; b.Cmp(limit) > 0 {
				t.Errorf("NodePool %s: new NodeClaims admitted while existing %s %s already exceeds limit %s", np.NodePool.Name, name, b.String(), limit.String())
			} else if u.Cmp(limit) > 0 {
				t.Errorf("NodePool %s: worst-case %s %s > limit %s", np.NodePool.Name, name, u.String(), limit.String())
			}
		}
	}
}
