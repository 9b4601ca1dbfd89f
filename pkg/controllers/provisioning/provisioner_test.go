package provisioning_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func TestPendingPodGetsNodeClaim(t *testing.T) {
	h := newHarness(t)
	np := test.MakeNodePool("default").
		Labels(map[string]string{"team": "a"}).
		Annotations(map[string]string{"example.com/owner": "ops"}).
		Requirement("example.com/tier", corev1.NodeSelectorOpIn, "gold").
		Obj()
	// A stale hash annotation: the NodeClaim takes its template's hash.
	np.Annotations = map[string]string{karpv1.NodePoolHashAnnotationKey: "1234"}
	h.readyNodePool(np)
	pods := h.pendingPods(test.MakePod("web").Requests("cpu", "1", "memory", "1Gi").Obj())

	res := h.schedule()

	claims := h.nodeClaims()
	if len(claims) != 1 || len(res.Created) != 1 {
		t.Fatalf("got %d NodeClaims (%v created), want 1", len(claims), res.Created)
	}
	nc := claims[0]
	if nc.GenerateName != "default-" {
		t.Errorf("generateName = %q, want default-", nc.GenerateName)
	}
	wantLabels := map[string]string{karpv1.NodePoolLabelKey: "default", "team": "a", "example.com/tier": "gold",
		"karpenter.kwok.sh/kwoknodeclass": "default"}
	if diff := cmp.Diff(wantLabels, nc.Labels); diff != "" {
		t.Errorf("labels (-want,+got):\n%s", diff)
	}
	if nc.Annotations[karpv1.NodePoolHashAnnotationKey] != np.Hash() || nc.Annotations["example.com/owner"] != "ops" {
		t.Errorf("annotations = %v, want the template's and the nodepool hash", nc.Annotations)
	}
	if len(nc.OwnerReferences) != 1 || nc.OwnerReferences[0].Kind != "NodePool" || nc.OwnerReferences[0].UID != np.UID ||
		nc.OwnerReferences[0].BlockOwnerDeletion == nil || !*nc.OwnerReferences[0].BlockOwnerDeletion {
		t.Errorf("owner references = %+v, want the NodePool blocking deletion", nc.OwnerReferences)
	}
	// The fake catalog's cheapest type holding 1 cpu / 1Gi is the small
	// one; every listed type must hold the pod.
	types := requirement(nc, corev1.LabelInstanceTypeStable)
	if types == nil || types.Operator != corev1.NodeSelectorOpIn || types.Values[0] != "small-instance-type" {
		t.Fatalf("instance-type requirement = %+v, want In starting with small-instance-type", types)
	}
	ct := requirement(nc, karpv1.CapacityTypeLabelKey)
	if ct == nil || ct.Operator != corev1.NodeSelectorOpIn || len(ct.Values) != 2 {
		t.Errorf("capacity-type requirement = %+v, want In [on-demand spot]", ct)
	}
	wantRequests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"),
		corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourcePods: resource.MustParse("1")}
	if !equalResources(wantRequests, nc.Spec.Resources.Requests) {
		t.Errorf("requests = %v, want %v", nc.Spec.Resources.Requests, wantRequests)
	}
	if nc.Spec.NodeClassRef == nil || nc.Spec.NodeClassRef.Name != "default" {
		t.Errorf("nodeClassRef = %+v, want the template's", nc.Spec.NodeClassRef)
	}
	if got := h.eventFor(pods[0], "Nominated"); !contains(got, "nodeclaim/"+nc.Name) {
		t.Errorf("Nominated event %q does not name nodeclaim/%s", got, nc.Name)
	}
}

func TestNominatedPodsAreNotProvisionedAgain(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	pods := h.pendingPods(test.MakePod("a").Requests("cpu", "1").Obj(), test.MakePod("b").Requests("cpu", "1").Obj())
	first := h.schedule()
	if len(first.Created) == 0 {
		t.Fatal("first pass created no NodeClaim")
	}
	for _, pod := range pods {
		if !h.cluster.IsNominated(pod) {
			t.Errorf("pod %s is not nominated after the first pass", pod.Name)
		}
	}
	// The next batch sees the nominations and does nothing.
	if second := h.schedule(); len(second.Created) != 0 {
		t.Errorf("second pass created %v, want nothing", second.Created)
	}
	// Once the nominations expire the pods are provisionable again, but the
	// NodeClaim still in flight holds them: they are nominated to it again.
	h.clock.Step(provisioningTTL() + 1)
	if len(h.cluster.ProvisionablePods()) != 2 {
		t.Fatalf("after expiry got %d provisionable pods, want 2", len(h.cluster.ProvisionablePods()))
	}
	if third := h.schedule(); len(third.Created) != 0 {
		t.Errorf("pass after expiry created %v, want nothing (the in-flight NodeClaim fits the pods)", third.Created)
	}
	if got := len(h.nodeClaims()); got != len(first.Created) {
		t.Errorf("got %d NodeClaims, want %d", got, len(first.Created))
	}
	for _, pod := range pods {
		if !h.cluster.IsNominated(pod) {
			t.Errorf("pod %s is not nominated again", pod.Name)
		}
	}
}

func TestWeightedNodePoolsPickTheHeavier(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("light").Weight(10).Obj())
	h.readyNodePool(test.MakeNodePool("heavy").Weight(50).Obj())
	h.readyNodePool(test.MakeNodePool("unweighted").Obj())
	h.pendingPods(test.MakePod("p").Requests("cpu", "1").Obj())
	h.schedule()
	claims := h.nodeClaims()
	if len(claims) != 1 || claims[0].Labels[karpv1.NodePoolLabelKey] != "heavy" {
		t.Fatalf("got %d NodeClaims (first labeled %v), want one from heavy", len(claims), nodePools(claims))
	}
}

func TestDaemonSetOverheadIsRequested(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	h.create(test.MakeDaemonSet("agent").Requests("cpu", "500m", "memory", "256Mi").Obj())
	h.eventually("DaemonSet in state", func() bool { return len(h.cluster.DaemonSets()) == 1 })
	h.pendingPods(test.MakePod("p").Requests("cpu", "1", "memory", "1Gi").Obj())
	h.schedule()
	claims := h.nodeClaims()
	if len(claims) != 1 {
		t.Fatalf("got %d NodeClaims, want 1", len(claims))
	}
	want := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"),
		corev1.ResourceMemory: resource.MustParse("1280Mi"), corev1.ResourcePods: resource.MustParse("2")}
	if !equalResources(want, claims[0].Spec.Resources.Requests) {
		t.Errorf("requests = %v, want pod + DaemonSet %v", claims[0].Spec.Resources.Requests, want)
	}
}

func TestPodFittingAnExistingNodeGetsNoNodeClaim(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	node := test.MakeNode("existing").ProviderID("fake://existing").
		Capacity("cpu", "8", "memory", "16Gi", "pods", "20").Allocatable("cpu", "8", "memory", "16Gi", "pods", "20").Obj()
	h.create(node)
	node.Status = test.MakeNode("existing").Capacity("cpu", "8", "memory", "16Gi", "pods", "20").
		Allocatable("cpu", "8", "memory", "16Gi", "pods", "20").Obj().Status
	if err := h.client.Status().Update(h.ctx, node); err != nil {
		t.Fatalf("updating node status: %v", err)
	}
	// The API server taints new nodes not-ready; no node controller runs
	// here to lift it.
	node.Spec.Taints = nil
	if err := h.client.Update(h.ctx, node); err != nil {
		t.Fatalf("untainting node: %v", err)
	}
	h.eventually("node allocatable in state", func() bool {
		for _, sn := range h.cluster.Nodes() {
			if sn.Node != nil && sn.Node.Name == "existing" && len(sn.Allocatable()) > 0 && len(sn.Node.Spec.Taints) == 0 {
				return true
			}
		}
		return false
	})
	pods := h.pendingPods(test.MakePod("p").Requests("cpu", "2").Obj())
	if res := h.schedule(); len(res.Created) != 0 {
		for _, n := range h.cluster.Nodes() {
			t.Logf("state node %s alloc=%v marked=%v init=%v", n.Name(), n.Allocatable(), n.MarkedForDeletion, n.Initialized())
		}
		t.Fatalf("created %v, want nothing", res.Created)
	}
	if got := h.eventFor(pods[0], "Nominated"); !contains(got, "node/existing") {
		t.Errorf("Nominated event %q does not name node/existing", got)
	}
	// A pod too big for what is left launches capacity.
	h.pendingPods(test.MakePod("big").Requests("cpu", "7").Obj())
	if res := h.schedule(); len(res.Created) != 1 {
		t.Errorf("created %v for a pod the node cannot hold, want one NodeClaim", res.Created)
	}
}

func TestRestartDoesNotProvisionAgain(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	pods := h.pendingPods(test.MakePod("a").Requests("cpu", "1").Obj(), test.MakePod("b").Requests("cpu", "3").Obj(),
		test.MakePod("c").Requests("cpu", "500m").Obj())
	first := h.schedule()
	if len(first.Created) == 0 {
		t.Fatal("first pass created nothing")
	}
	// A new controller: fresh state (no nominations), same API.
	h.restart()
	h.eventually("pods and NodePool in the new state", func() bool {
		return len(h.cluster.ProvisionablePods()) == len(pods) && len(h.cluster.NodePools()) == 1
	})
	for _, pod := range pods {
		if h.cluster.IsNominated(pod) {
			t.Fatalf("fresh state already has a nomination for %s", pod.Name)
		}
	}
	if res := h.schedule(); len(res.Created) != 0 {
		t.Errorf("restarted provisioner created %v, want nothing while in-flight NodeClaims cover the pods", res.Created)
	}
	if got := len(h.nodeClaims()); got != len(first.Created) {
		t.Errorf("got %d NodeClaims after restart, want %d", got, len(first.Created))
	}
	for _, pod := range pods {
		if !h.cluster.IsNominated(pod) {
			t.Errorf("pod %s not nominated to the in-flight capacity after restart", pod.Name)
		}
	}
}

// TestRestartMidBurstLaunchesOnlyForTheNewPods: a controller restarted
// between two halves of a burst counts the NodeClaims in flight for the
// first half and launches only what the second half needs: the capacity
// launched per cpu requested stays that of one pass, where launching the
// first half again would make it half as much again.
func TestRestartMidBurstLaunchesOnlyForTheNewPods(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	sizes := [][2]string{{"250m", "512Mi"}, {"500m", "1Gi"}, {"1", "2Gi"}, {"2", "3Gi"}}
	burst := func(prefix string, n int) []*corev1.Pod {
		pods := make([]*corev1.Pod, n)
		for i := range pods {
			size := sizes[i%len(sizes)]
			pods[i] = test.MakePod(fmt.Sprintf("%s-%d", prefix, i)).Requests("cpu", size[0], "memory", size[1]).Obj()
		}
		return h.pendingPods(pods...)
	}
	launchedCPU := func(res *provisioning.Results) (milli int64) {
		for _, nc := range res.Solve.NodeClaims {
			q := nc.InstanceType.Capacity[corev1.ResourceCPU]
			milli += q.MilliValue()
		}
		return milli
	}
	const halfCPU = 50 * (250 + 500 + 1000 + 2000) // millicores a half requests
	first := burst("first", 200)
	pass1 := h.schedule()
	if len(pass1.Created) == 0 || len(pass1.Solve.PodErrors) > 0 {
		t.Fatalf("first pass created %d NodeClaims with %d pods unplaced", len(pass1.Created), len(pass1.Solve.PodErrors))
	}

	h.restart()
	second := burst("second", 200)
	h.eventually("both halves provisionable in the new state", func() bool {
		return len(h.cluster.ProvisionablePods()) == len(first)+len(second)
	})
	pass2 := h.schedule()
	if len(pass2.Solve.PodErrors) > 0 {
		t.Fatalf("second pass left %d pods unplaced: %s", len(pass2.Solve.PodErrors), pass2.Solve.PodErrors[0].Status.Message())
	}
	onePass := float64(launchedCPU(pass1)) / halfCPU
	both := float64(launchedCPU(pass1)+launchedCPU(pass2)) / (2 * halfCPU)
	t.Logf("NodeClaims %d + %d; launched cpu per cpu requested: %.3f after the first pass, %.3f after both", len(pass1.Created), len(pass2.Created), onePass, both)
	if both > onePass*1.1 {
		t.Errorf("launched %.3f cpu per cpu requested after the restart, one pass launches %.3f: the first half was launched for again", both, onePass)
	}
	if got, want := len(h.nodeClaims()), len(pass1.Created)+len(pass2.Created); got != want {
		t.Errorf("%d NodeClaims in the API, want the %d the two passes created", got, want)
	}
	for _, p := range append(first, second...) {
		if !h.cluster.IsNominated(p) {
			t.Errorf("pod %s is not nominated after the second pass", p.Name)
		}
	}
}

func TestPodsOfDisruptedNodesAreProvisioned(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	node := test.MakeNode("old").ProviderID("fake://old").Label(karpv1.NodePoolLabelKey, "default").
		Taint(corev1.Taint{Key: karpv1.DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}).Obj()
	h.create(node)
	pod := test.MakePod("bound").Requests("cpu", "1").NodeName("old").Obj()
	h.create(pod)
	h.eventually("bound pod on the disrupted node in state", func() bool {
		for _, sn := range h.cluster.Nodes() {
			if sn.Name() == "old" && sn.MarkedForDeletion && len(sn.Pods) == 1 {
				return true
			}
		}
		return false
	})
	first := h.schedule()
	if len(first.Created) != 1 {
		t.Fatalf("created %v, want one NodeClaim for the disrupted node's pod", first.Created)
	}
	if !h.cluster.IsNominated(pod) {
		t.Error("the rescheduled pod is not nominated")
	}
	if second := h.schedule(); len(second.Created) != 0 {
		t.Errorf("second pass created %v, want nothing", second.Created)
	}
}

func provisioningTTL() time.Duration { return provisioning.DefaultOptions().NominationTTL() }

func nodePools(claims []karpv1.NodeClaim) []string {
	var out []string
	for _, nc := range claims {
		out = append(out, nc.Labels[karpv1.NodePoolLabelKey])
	}
	return out
}

func equalResources(want, got corev1.ResourceList) bool {
	if len(want) != len(got) {
		return false
	}
	for name, q := range want {
		if g, ok := got[name]; !ok || g.Cmp(q) != 0 {
			return false
		}
	}
	return true
}
