package state_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// podsPerNode is how many bound pods each node of the growth tests holds,
// beside one pending pod per node.
const podsPerNode = 5

// populated builds a cluster state of nodes registered karp nodes, each
// with podsPerNode bound pods, and as many pending pods as nodes; the
// objects are built before the state is measured, so what is measured is
// what the state keeps of them.
func populated(nodes int) func() *state.Cluster {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var claims []*karpv1.NodeClaim
	var nodeObjs []*corev1.Node
	var pods []*corev1.Pod
	for i := range nodes {
		name := fmt.Sprintf("node-%d", i)
		providerID := "fake://" + name
		claims = append(claims, test.MakeNodeClaim(name).NodePool("pool").ProviderID(providerID).NodeName(name).
			Condition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", now).Obj())
		nodeObjs = append(nodeObjs, test.MakeNode(name).ProviderID(providerID).Label(karpv1.NodePoolLabelKey, "pool").
			Allocatable("cpu", "16", "memory", "64Gi", "pods", "110").Obj())
		for j := range podsPerNode {
			pods = append(pods, test.MakePod(fmt.Sprintf("%s-pod-%d", name, j)).Requests("cpu", "1").NodeName(name).Phase(corev1.PodRunning).Obj())
		}
		pods = append(pods, test.MakePod(fmt.Sprintf("pending-%d", i)).Requests("cpu", "1").Obj())
	}
	return func() *state.Cluster {
		c := state.NewCluster(clocktesting.NewFakeClock(now), nil)
		for i := range claims {
			c.UpdateNodeClaim(claims[i])
			c.UpdateNode(nodeObjs[i])
		}
		for _, p := range pods {
			c.UpdatePod(p)
		}
		return c
	}
}

// heapOf is the live heap the cluster state built by build holds.
func heapOf(build func() *state.Cluster) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(c)
	if after.HeapAlloc < before.HeapAlloc {
		return 0
	}
	return after.HeapAlloc - before.HeapAlloc
}

// TestStateGrowsLinearly: what the cluster state keeps, and what a
// snapshot of it allocates, per pod stays the same from 500 to 4,000
// nodes (3,000 to 24,000 pods): no index or cache grows faster than the
// pods and nodes it holds. The state's memory and a snapshot's
// allocations per pod at the larger size may be at most 1.3 times those
// at the smaller one.
func TestStateGrowsLinearly(t *testing.T) {
	const small, large = 500, 4000
	perPod := func(nodes int) (heap, snapshotAllocs float64) {
		build := populated(nodes)
		pods := float64(nodes * (podsPerNode + 1))
		heap = float64(heapOf(build)) / pods
		c := build()
		snapshotAllocs = testing.AllocsPerRun(2, func() { c.Snapshot() }) / pods
		return heap, snapshotAllocs
	}
	smallHeap, smallAllocs := perPod(small)
	largeHeap, largeAllocs := perPod(large)
	t.Logf("state bytes per pod: %.0f at %d nodes, %.0f at %d; snapshot allocations per pod: %.2f, %.2f",
		smallHeap, small, largeHeap, large, smallAllocs, largeAllocs)
	if smallHeap == 0 || largeHeap > 1.3*smallHeap {
		t.Errorf("the state keeps %.0f bytes per pod at %d nodes, %.0f at %d: more than 1.3x, it grows faster than its pods",
			largeHeap, large, smallHeap, small)
	}
	if largeAllocs > 1.3*smallAllocs {
		t.Errorf("a snapshot allocates %.2f times per pod at %d nodes, %.2f at %d: more than 1.3x",
			largeAllocs, large, smallAllocs, small)
	}
}
