package provisioning_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func TestLimitsStopProvisioning(t *testing.T) {
	h := newHarness(t)
	np := h.readyNodePool(test.MakeNodePool("limited").
		Limits(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("17")}).Obj())
	// A NodeClaim of the pool already holds 16 cpu; a taint keeps the pod
	// off it, so only new capacity could help.
	taint := corev1.Taint{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}
	existing := test.MakeNodeClaim("limited-existing").NodePool("limited").Taint(taint).
		NodeClassRef(np.Spec.Template.Spec.NodeClassRef).
		Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "large-instance-type").Obj()
	h.create(existing)
	existing.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"),
		corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("110")}
	if err := h.client.Status().Update(h.ctx, existing); err != nil {
		t.Fatalf("setting NodeClaim capacity: %v", err)
	}
	h.eventually("existing NodeClaim capacity in state", func() bool {
		for _, sn := range h.cluster.Nodes() {
			if sn.NodeClaim != nil && sn.NodeClaim.Name == existing.Name && len(sn.Capacity()) > 0 {
				return true
			}
		}
		return false
	})
	pods := h.pendingPods(test.MakePod("p").Requests("cpu", "1").Obj())

	if res := h.schedule(); len(res.Created) != 0 {
		t.Fatalf("created %v beyond the cpu limit", res.Created)
	}
	got := h.eventFor(pods[0], "FailedScheduling")
	t.Logf("FailedScheduling: %s", got)
	if !contains(got, "limit cpu") {
		t.Errorf("FailedScheduling event %q does not name the cpu limit", got)
	}

	// Raising the limit lets the same pod through.
	latest := &karpv1.NodePool{}
	if err := h.client.Get(h.ctx, clientKey(np.Name), latest); err != nil {
		t.Fatalf("getting NodePool: %v", err)
	}
	latest.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("100")}
	if err := h.client.Update(h.ctx, latest); err != nil {
		t.Fatalf("raising the limit: %v", err)
	}
	h.eventually("raised limit in state", func() bool {
		for _, got := range h.cluster.NodePools() {
			if got.Name == np.Name && limitOf(got, corev1.ResourceCPU) == 100 {
				return true
			}
		}
		return false
	})
	if res := h.schedule(); len(res.Created) != 1 {
		t.Errorf("after raising the limit created %v, want one NodeClaim", res.Created)
	}
}

func TestNodeLimitCountsInFlightNodeClaims(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("one").Limits(corev1.ResourceList{"nodes": resource.MustParse("1")}).Obj())
	h.pendingPods(test.MakePod("a").Requests("cpu", "3").Obj())
	if res := h.schedule(); len(res.Created) != 1 {
		t.Fatalf("created %v, want one NodeClaim", res.Created)
	}
	// The first NodeClaim is full; a second pod needs a second node, which
	// the nodes limit forbids.
	pods := h.pendingPods(test.MakePod("b").Requests("cpu", "3").Obj())
	if res := h.schedule(); len(res.Created) != 0 {
		t.Fatalf("created %v beyond nodes=1", res.Created)
	}
	if got := h.eventFor(pods[0], "FailedScheduling"); !contains(got, "limit nodes") {
		t.Errorf("FailedScheduling event %q does not name the nodes limit", got)
	}
}

func limitOf(np *karpv1.NodePool, name corev1.ResourceName) int64 {
	q := np.Spec.Limits[name]
	return q.Value()
}

// limitTypes makes the provider offer a cheap 2-cpu type and a dearer
// 8-cpu one, so the solver picks the small one but may list the big one.
func limitTypes(h *harness) {
	h.t.Helper()
	list := func(cpu string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi"),
			corev1.ResourcePods: resource.MustParse("20")}
	}
	h.provider.SetInstanceTypes(
		fake.NewInstanceType(fake.InstanceTypeOptions{Name: "two-cpu", Resources: list("2")}),
		fake.NewInstanceType(fake.InstanceTypeOptions{Name: "eight-cpu", Resources: list("8")}),
	)
}

// worstCaseCPU sums, over the pool's NodeClaims, the cpu capacity of the
// largest instance type each lists: what the pool holds if the provider
// launches the largest option of every NodeClaim.
func worstCaseCPU(t *testing.T, h *harness) int64 {
	t.Helper()
	sizes := map[string]int64{"two-cpu": 2, "eight-cpu": 8}
	var total int64
	for _, nc := range h.nodeClaims() {
		var largest int64
		for _, r := range nc.Spec.Requirements {
			if r.Key != corev1.LabelInstanceTypeStable {
				continue
			}
			for _, v := range r.Values {
				largest = max(largest, sizes[v])
			}
		}
		t.Logf("NodeClaim %s: largest listed type has %d cpu", nc.Name, largest)
		total += largest
	}
	return total
}

// TestCPULimitHoldsWhicheverListedTypeLaunchesInOnePass: two NodeClaims of
// one pass may each list the 8-cpu type only while both can be 8-cpu within
// the limit.
func TestCPULimitHoldsWhicheverListedTypeLaunchesInOnePass(t *testing.T) {
	h := newHarness(t)
	limitTypes(h)
	h.readyNodePool(test.MakeNodePool("limited").Limits(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}).Obj())
	h.pendingPods(test.MakePod("a").Requests("cpu", "1500m").Obj(), test.MakePod("b").Requests("cpu", "1500m").Obj())
	if res := h.schedule(); len(res.Created) == 0 {
		t.Fatal("created no NodeClaim")
	}
	if got := worstCaseCPU(t, h); got > 10 {
		t.Errorf("the NodeClaims may launch %d cpu, over the limit of 10", got)
	}
}

// TestCPULimitHoldsWhicheverListedTypeLaunchesAcrossPasses: an in-flight
// NodeClaim counts against the limit as its largest listed type.
func TestCPULimitHoldsWhicheverListedTypeLaunchesAcrossPasses(t *testing.T) {
	h := newHarness(t)
	limitTypes(h)
	h.readyNodePool(test.MakeNodePool("limited").Limits(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}).Obj())
	h.pendingPods(test.MakePod("a").Requests("cpu", "1500m").Obj())
	if res := h.schedule(); len(res.Created) != 1 {
		t.Fatalf("first pass created %v, want one NodeClaim", res.Created)
	}
	h.pendingPods(test.MakePod("b").Requests("cpu", "1500m").Obj())
	h.schedule()
	if got := worstCaseCPU(t, h); got > 10 {
		t.Errorf("the NodeClaims may launch %d cpu, over the limit of 10", got)
	}
}

// TestClusterLimitsStopEveryNodePoolTogether: with --cluster-limits
// nodes=2, two NodePools without limits of their own launch two NodeClaims
// between them, and the pods left over are told the cluster limit holds
// them.
func TestClusterLimitsStopEveryNodePoolTogether(t *testing.T) {
	h := newHarness(t)
	opts := provisioning.DefaultOptions()
	opts.ClusterLimits = corev1.ResourceList{"nodes": resource.MustParse("2")}
	h.provisioner = provisioning.NewProvisioner(h.mgr.GetClient(), h.provider, h.cluster, h.base.Recorder, h.clock, opts)
	h.readyNodePool(test.MakeNodePool("a").Weight(10).Obj())
	h.readyNodePool(test.MakeNodePool("b").Obj())
	// Each pod needs a node of its own.
	var pods []*corev1.Pod
	for _, name := range []string{"p1", "p2", "p3", "p4"} {
		pods = append(pods, test.MakePod(name).Labels(map[string]string{"app": "spread"}).Requests("cpu", "1").
			PodAntiAffinity(corev1.LabelHostname, map[string]string{"app": "spread"}).Obj())
	}
	h.pendingPods(pods...)
	res := h.schedule()
	if len(res.Created) != 2 {
		t.Fatalf("created %v, want two NodeClaims (nodes=2 across the cluster)", res.Created)
	}
	// The solve planned a NodeClaim per pod; the first two were admitted.
	if len(res.Solve.NodeClaims) != 4 {
		t.Fatalf("the solve planned %d NodeClaims, want 4", len(res.Solve.NodeClaims))
	}
	for _, nc := range res.Solve.NodeClaims[2:] {
		for _, pod := range nc.Pods {
			got := h.eventFor(pod, "FailedScheduling")
			if !contains(got, "cluster-wide limit nodes=2") || !contains(got, "[ClusterLimit]") {
				t.Errorf("%s: FailedScheduling %q does not name the cluster limit", pod.Name, got)
			}
		}
	}
	// Another pass launches nothing more.
	if res := h.schedule(); len(res.Created) != 0 {
		t.Errorf("second pass created %v beyond the cluster limit", res.Created)
	}
}
