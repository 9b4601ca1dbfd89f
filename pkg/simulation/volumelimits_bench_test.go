package simulation

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
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
	for i := 0; i < 2000; i++ {
		name := fmt.Sprintf("node-%d", i)
		busy := test.MakePod(name+"-busy").Requests("cpu", "2", "memory", "4Gi").NodeName(name).Obj()
		in.PodVolumes[busy.UID] = scheduling.Volumes{}
		in.PodVolumes[busy.UID].Add(ebs, scheduling.ClaimKey(busy.Namespace, "data-"+busy.Name))
		in.Nodes = append(in.Nodes, &Node{Name: name, Initialized: true,
			Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: fmt.Sprintf("test-zone-%d", 1+i%3),
				corev1.LabelInstanceTypeStable: "bench-it-3", karpv1.NodePoolLabelKey: "bench"},
			Allocatable:  test.ResourceList("cpu", "3900m", "memory", "8182Mi", "pods", "40"),
			Pods:         []*corev1.Pod{busy},
			VolumeLimits: scheduling.VolumeLimits{ebs: 3}})
	}
	b.ReportAllocs()
	b.ResetTimer()
	var res *Result
	cpu := processCPU()
	for i := 0; i < b.N; i++ {
		res = Solve(b.Context(), in)
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
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
