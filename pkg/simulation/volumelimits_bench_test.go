package simulation

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// BenchmarkSolveOntoVolumeLimitedNodes is BenchmarkSolveOntoExistingNodes
// with CSI volume limits in play: every pending pod attaches a claim of
// its own, and each of the 2,000 nodes, which already attaches one, can
// attach two more. It measures what the per-pod volume check costs when
// every pod and every node takes part (the benchmark without claims
// measures that it costs nothing otherwise).
func BenchmarkSolveOntoVolumeLimitedNodes(b *testing.B) {
	in := benchInput(b, "5000")
	in.PodVolumes = map[types.UID]scheduling.Volumes{}
	for i, p := range in.Pods {
		p.UID = types.UID(fmt.Sprintf("bench-pod-%d", i))
		in.PodVolumes[p.UID] = scheduling.Volumes{}
		in.PodVolumes[p.UID].Add(ebs, scheduling.ClaimKey(p.Namespace, "data-"+p.Name))
	}
	for _, node := range addBusyNodes(&in, 2000) {
		busy := node.Pods[0]
		in.PodVolumes[busy.UID] = scheduling.Volumes{}
		in.PodVolumes[busy.UID].Add(ebs, scheduling.ClaimKey(busy.Namespace, "data-"+busy.Name))
		node.VolumeLimits = scheduling.VolumeLimits{ebs: 3}
	}
	res := solveBench(b, func() *Result { return Solve(b.Context(), in) })
	placed := 0
	for _, ep := range res.ExistingNodes {
		placed += len(ep.Pods)
		if len(ep.Pods) > 2 {
			b.Fatalf("node %s took %d pods with claims, over its limit of 2 more", ep.Node.Name, len(ep.Pods))
		}
	}
	b.ReportMetric(float64(len(in.Pods))*float64(b.N)/b.Elapsed().Seconds(), "pods/sec")
	b.ReportMetric(float64(placed), "on-existing")
	b.ReportMetric(float64(len(res.NodeClaims)), "nodes")
}
