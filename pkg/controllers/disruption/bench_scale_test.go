package disruption

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// benchScaleCopies loads the packed diverse cluster (1,000 nodes) this
// many times: 5,000 nodes and 25,000 pods.
const benchScaleCopies = 5

// BenchmarkConsolidationPass5000 measures a whole consolidation pass over
// 5,000 nodes with no API calls: the world (candidates, their pods, PDBs,
// budgets) built from the cluster state, the solver input snapshotted,
// and the methods' search (multi-node's prefix search over at most
// MaxMultiNodeCandidates, single-node's batch of SingleNodeBatch). It
// reports the CPU time of a pass (user+system, which counts the garbage
// collector's work on both cores) beside the wall time, and the
// allocations per node.
func BenchmarkConsolidationPass5000(b *testing.B) {
	c, _ := benchCluster(b, benchScaleCopies)
	b.Run("as-packed", func(b *testing.B) { benchFullPass(b, c) })
	// Without launchable capacity every move must be a delete, which a
	// packed cluster never allows: every search runs to its end.
	b.Run("nothing-to-do", func(b *testing.B) { benchFullPass(b, c, withoutNodePools) })
	// The same without the pass's NodeCache: every what-if derives every
	// pod's requests again.
	b.Run("nothing-to-do-uncached", func(b *testing.B) { benchFullPass(b, c, withoutNodePools, withoutNodeCache) })
}

// withoutNodeCache makes each solve derive the pods' requests itself.
func withoutNodeCache(in *simulation.Input) { in.NodeCache = nil }

// withoutNodePools leaves the solver no launchable capacity.
func withoutNodePools(in *simulation.Input) { in.NodePools = nil }

func benchFullPass(b *testing.B, c *Controller, mutate ...func(*simulation.Input)) {
	b.ReportAllocs()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	mallocs := ms.Mallocs
	cpu0 := cpuTime(b)
	b.ResetTimer()
	var cmd Command
	var w *world
	for i := 0; i < b.N; i++ {
		cmd, w = fullPass(b, c, mutate...)
	}
	b.StopTimer()
	cpu := cpuTime(b) - cpu0
	runtime.ReadMemStats(&ms)
	nodes := float64(len(w.stateNodes))
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(ms.Mallocs-mallocs)/float64(b.N)/nodes, "allocs/node")
	b.ReportMetric(nodes, "nodes")
	b.ReportMetric(float64(len(w.candidates)), "candidates")
	b.ReportMetric(float64(len(cmd.Candidates)), "disrupted")
	b.Logf("decision: %s", cmd.String())
}

// fullPass is Pass without the queue, the API reads and the writes: the
// world, the solver input from the cluster state (as refresh gathers it),
// and compute.
func fullPass(tb testing.TB, c *Controller, mutate ...func(*simulation.Input)) (Command, *world) {
	w := c.buildWorld(tb.Context(), nil)
	nodes, stateNodes := c.cluster.Snapshot()
	for i, sn := range stateNodes {
		nodes[i].Settling = settling(sn, w)
	}
	in := simulation.Input{Nodes: nodes, Pods: c.cluster.ProvisionablePods(), Options: c.simulator.opts, NodeCache: simulation.NewNodeCache()}
	for _, name := range w.poolNames {
		in.NodePools = append(in.NodePools, &simulation.NodePool{NodePool: w.nodePools[name], InstanceTypes: w.typeList[name]})
	}
	for _, m := range mutate {
		m(&in)
	}
	c.simulator.in = in
	c.memo = ""
	cmd, err := c.compute(tb.Context(), w)
	if err != nil {
		tb.Fatal(err)
	}
	return cmd, w
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
