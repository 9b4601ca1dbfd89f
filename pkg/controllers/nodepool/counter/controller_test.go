package counter_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodepool/counter"
	"github.com/karp-autoscaler/karp/pkg/metrics"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

func launchedClaim(name, pool, providerID string, capacity corev1.ResourceList) karpv1.NodeClaim {
	nc := test.MakeNodeClaim(name).NodePool(pool).Obj()
	nc.Status.ProviderID = providerID
	nc.Status.Capacity = capacity
	return *nc
}

func TestSum(t *testing.T) {
	for name, tc := range map[string]struct {
		nodeClaims []karpv1.NodeClaim
		nodes      []corev1.Node
		want       corev1.ResourceList
		wantNodes  int64
	}{
		"empty pool": {want: test.ResourceList("nodes", "0")},
		"registered claim counts its node's capacity": {
			nodeClaims: []karpv1.NodeClaim{launchedClaim("a", "p", "id-a", test.ResourceList("cpu", "4"))},
			nodes:      []corev1.Node{*test.MakeNode("a").ProviderID("id-a").Allocatable("cpu", "8").Obj()},
			want:       test.ResourceList("cpu", "8", "nodes", "1"),
			wantNodes:  1,
		},
		"launched claim without node counts the launched capacity": {
			nodeClaims: []karpv1.NodeClaim{launchedClaim("a", "p", "id-a", test.ResourceList("cpu", "4", "memory", "8Gi"))},
			want:       test.ResourceList("cpu", "4", "memory", "8Gi", "nodes", "1"),
			wantNodes:  1,
		},
		"unlaunched claims hold nothing; nodes without claims count": {
			nodeClaims: []karpv1.NodeClaim{*test.MakeNodeClaim("pending").NodePool("p").Obj()},
			nodes:      []corev1.Node{*test.MakeNode("stray").ProviderID("id-stray").Allocatable("cpu", "2").Obj()},
			want:       test.ResourceList("cpu", "2", "nodes", "1"),
			wantNodes:  1,
		},
	} {
		t.Run(name, func(t *testing.T) {
			got, gotNodes := counter.Sum(tc.nodeClaims, tc.nodes)
			if diff := cmp.Diff(quantities(tc.want), quantities(got)); diff != "" {
				t.Errorf("resources (-want,+got):\n%s", diff)
			}
			if gotNodes != tc.wantNodes {
				t.Errorf("nodes = %d, want %d", gotNodes, tc.wantNodes)
			}
		})
	}
}

// quantities renders a ResourceList canonically for comparison.
func quantities(l corev1.ResourceList) map[corev1.ResourceName]string {
	out := map[corev1.ResourceName]string{}
	for k, v := range l {
		out[k] = v.String()
	}
	return out
}

func TestCounterPatchesStatusAndMetrics(t *testing.T) {
	h.Reset(t)
	c := counter.NewController(h.Client)
	pool := test.MakeNodePool("counted").Limits(test.ResourceList("cpu", "100")).Obj()
	h.Create(t, pool)

	for _, nc := range []karpv1.NodeClaim{
		launchedClaim("counted-a", "counted", "id-a", test.ResourceList("cpu", "4")),
		launchedClaim("counted-b", "counted", "id-b", test.ResourceList("cpu", "2", "memory", "4Gi")),
		launchedClaim("other-pool", "other", "id-c", test.ResourceList("cpu", "64")),
	} {
		status := nc.Status
		h.Create(t, &nc)
		nc.Status = status
		h.UpdateStatus(t, &nc)
	}
	h.Create(t, test.MakeNode("node-a").ProviderID("id-a").Label(karpv1.NodePoolLabelKey, "counted").Allocatable("cpu", "8").Obj())

	if _, err := operatortest.Reconcile(t, h, c, pool.Name); err != nil {
		t.Fatal(err)
	}
	got := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool.Name}}
	h.Get(t, got)
	want := test.ResourceList("cpu", "10", "memory", "4Gi", "nodes", "2")
	if diff := cmp.Diff(quantities(want), quantities(got.Status.Resources)); diff != "" {
		t.Errorf("status.resources (-want,+got):\n%s", diff)
	}
	if got.Status.Nodes == nil || *got.Status.Nodes != 2 {
		t.Errorf("status.nodes = %v, want 2", got.Status.Nodes)
	}
	if v := testutil.ToFloat64(metrics.NodePoolUsage.WithLabelValues("counted", "cpu")); v != 10 {
		t.Errorf("karpenter_nodepools_usage{cpu} = %v, want 10", v)
	}
	if v := testutil.ToFloat64(metrics.NodePoolLimit.WithLabelValues("counted", "cpu")); v != 100 {
		t.Errorf("karpenter_nodepools_limit{cpu} = %v, want 100", v)
	}

	// A node grows (capacity reported by the kubelet): the count follows.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	h.Get(t, node)
	node.Status.Capacity[corev1.ResourceCPU] = resource.MustParse("16")
	h.UpdateStatus(t, node)
	if _, err := operatortest.Reconcile(t, h, c, pool.Name); err != nil {
		t.Fatal(err)
	}
	h.Get(t, got)
	if cpu := got.Status.Resources[corev1.ResourceCPU]; cpu.String() != "18" {
		t.Errorf("status.resources.cpu after growth = %s, want 18", cpu.String())
	}
}
