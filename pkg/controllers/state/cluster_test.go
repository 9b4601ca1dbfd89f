package state_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	statecontrollers "github.com/karp-autoscaler/karp/pkg/controllers/state"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// The tests in this file check pkg/state's Cluster as the state
// controllers' informers feed it from a real API server: the joined view of
// NodeClaims, Nodes and pods, Synced, nominations and the node metrics.
// pkg/state's own tests are pure and run in the unit tier.

func cleanup(t *testing.T) {
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context()) // t.Context() ends before the cleanups run
		_ = env.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace("default"), client.GracePeriodSeconds(0))
		_ = env.Client.DeleteAllOf(ctx, &karpv1.NodeClaim{})
		_ = env.Client.DeleteAllOf(ctx, &corev1.Node{})
		_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			var claims karpv1.NodeClaimList
			var nodes corev1.NodeList
			var pods corev1.PodList
			if env.Client.List(ctx, &claims) != nil || env.Client.List(ctx, &nodes) != nil || env.Client.List(ctx, &pods) != nil {
				return false, nil
			}
			return len(claims.Items)+len(nodes.Items)+len(pods.Items) == 0, nil
		})
	})
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(t.Context(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 15*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func nodeNamed(cluster *state.Cluster, name string) *state.StateNode {
	for _, sn := range cluster.Nodes() {
		if sn.Name() == name {
			return sn
		}
	}
	return nil
}

// TestInformersJoinNodeClaimsAndNodes runs the real informer controllers
// and checks the joined view: a launched NodeClaim with its Node and pods,
// an in-flight NodeClaim, and a Node karp does not manage.
func TestInformersJoinNodeClaimsAndNodes(t *testing.T) {
	cleanup(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	clk := clocktesting.NewFakeClock(time.Now())
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	cluster := state.NewCluster(clk, mgr.GetClient())
	if err := statecontrollers.Register(ctx, mgr, cluster); err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()

	launched := test.MakeNodeClaim("pool-a").NodePool("pool").Obj()
	create(t, launched)
	launched.Status.ProviderID = "fake://a"
	launched.Status.Capacity = test.ResourceList("cpu", "4", "memory", "8Gi", "pods", "10")
	if err := env.Client.Status().Update(ctx, launched); err != nil {
		t.Fatal(err)
	}
	create(t, test.MakeNodeClaim("pool-b").NodePool("pool").Obj())
	create(t, test.MakeNode("node-a").ProviderID("fake://a").Label(karpv1.NodePoolLabelKey, "pool").Obj())
	create(t, test.MakeNode("unmanaged").ProviderID("other://x").Obj())
	create(t, test.MakePod("app").NodeName("node-a").Requests("cpu", "1").HostPort(8080).Obj())
	create(t, test.MakePod("agent").NodeName("node-a").Requests("cpu", "250m").Owner("DaemonSet", "ds", "uid-ds").Obj())

	eventually(t, "the joined view", func() bool {
		sn := nodeNamed(cluster, "node-a")
		return len(cluster.Nodes()) == 3 && sn != nil && sn.NodeClaim != nil && len(sn.Pods) == 2
	})
	a := nodeNamed(cluster, "node-a")
	if a.NodeClaim.Name != "pool-a" || a.ID() != state.NodeClaimID("pool-a") {
		t.Errorf("node-a joined with %s (ID %s), want pool-a", a.NodeClaim.Name, a.ID())
	}
	if got := a.PodRequests()[corev1.ResourceCPU]; got.Cmp(resource.MustParse("1250m")) != 0 {
		t.Errorf("pod requests cpu = %s, want 1250m", got.String())
	}
	if got := a.DaemonRequests()[corev1.ResourceCPU]; got.Cmp(resource.MustParse("250m")) != 0 {
		t.Errorf("daemon requests cpu = %s, want 250m", got.String())
	}
	if ports := a.HostPorts(); len(ports) != 1 || ports[0].Port != 8080 {
		t.Errorf("host ports = %v, want 8080", ports)
	}
	b := nodeNamed(cluster, "pool-b")
	if b == nil || b.Node != nil || b.Initialized() {
		t.Errorf("pool-b = %+v, want an in-flight, uninitialized StateNode", b)
	}
	u := nodeNamed(cluster, "unmanaged")
	if u == nil || u.Managed() || !u.Initialized() {
		t.Errorf("unmanaged = %+v, want an unmanaged, initialized StateNode", u)
	}
	usage := cluster.NodePoolUsage()["pool"]
	if usage.Nodes != 2 || usage.Resources.Cpu().Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("pool usage = %d nodes, cpu %s; want 2 nodes and the launched one's 4 cpu", usage.Nodes, usage.Resources.Cpu())
	}

	// Deleting the Node leaves the NodeClaim in flight again.
	if err := env.Client.Delete(ctx, &corev1.Node{ObjectMeta: a.Node.ObjectMeta}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "node-a gone from the view", func() bool { return nodeNamed(cluster, "pool-a") != nil })
}

func TestSyncedRequiresEveryNodeClaimAndNode(t *testing.T) {
	cleanup(t)
	ctx := t.Context()
	clk := clocktesting.NewFakeClock(time.Now())
	cluster := state.NewCluster(clk, env.Client)
	if ok, err := cluster.Synced(ctx); err != nil || !ok {
		t.Fatalf("empty cluster: Synced = %v, %v; want true", ok, err)
	}
	nc := test.MakeNodeClaim("nc").NodePool("pool").Obj()
	create(t, nc)
	if ok, _ := cluster.Synced(ctx); ok {
		t.Error("Synced with a NodeClaim missing from state")
	}
	cluster.UpdateNodeClaim(nc)
	if ok, _ := cluster.Synced(ctx); !ok {
		t.Error("not Synced with every NodeClaim in state (not launched yet)")
	}
	// Launched in the API, but state still has the version without a
	// provider ID: not synced.
	launched := nc.DeepCopy()
	launched.Status.ProviderID = "fake://nc"
	if err := env.Client.Status().Update(ctx, launched); err != nil {
		t.Fatal(err)
	}
	if ok, _ := cluster.Synced(ctx); ok {
		t.Error("Synced while state lacks the NodeClaim's provider ID")
	}
	cluster.UpdateNodeClaim(launched)
	node := test.MakeNode("n").ProviderID("fake://nc").Obj()
	create(t, node)
	if ok, _ := cluster.Synced(ctx); ok {
		t.Error("Synced with a Node missing from state")
	}
	cluster.UpdateNode(node)
	if ok, _ := cluster.Synced(ctx); !ok {
		t.Error("not Synced with everything in state")
	}
}

func TestSyncedForgetsNodeClaimsTheAPINoLongerHas(t *testing.T) {
	cleanup(t)
	ctx := t.Context()
	clk := clocktesting.NewFakeClock(time.Now())
	cluster := state.NewCluster(clk, env.Client)
	cluster.UpdateNodeClaim(test.MakeNodeClaim("ghost").NodePool("pool").Obj())
	if _, err := cluster.Synced(ctx); err != nil {
		t.Fatal(err)
	}
	if nodeNamed(cluster, "ghost") == nil {
		t.Fatal("a NodeClaim just recorded was forgotten before the grace period")
	}
	clk.Step(16 * time.Second)
	if _, err := cluster.Synced(ctx); err != nil {
		t.Fatal(err)
	}
	if nodeNamed(cluster, "ghost") != nil {
		t.Error("a NodeClaim the API never listed is still in state after the grace period")
	}
}

func TestNominationsExpireAndCountOnTheirNode(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	cluster := state.NewCluster(clk, env.Client)
	cluster.UpdateNodeClaim(test.MakeNodeClaim("nc").NodePool("pool").Obj())
	pod := test.MakePod("p").Requests("cpu", "1").Obj()
	cluster.UpdatePod(pod)
	if got := len(cluster.ProvisionablePods()); got != 1 {
		t.Fatalf("%d provisionable pods, want 1", got)
	}
	cluster.Nominate(pod, state.NodeClaimID("nc"), 20*time.Second)
	if got := len(cluster.ProvisionablePods()); got != 0 {
		t.Errorf("%d provisionable pods while nominated, want 0", got)
	}
	nodes, _ := cluster.Snapshot()
	if len(nodes) != 1 || len(nodes[0].Pods) != 1 || nodes[0].Pods[0].Name != "p" {
		t.Fatalf("snapshot = %+v, want the nominated pod counted on nc", nodes)
	}
	clk.Step(20 * time.Second)
	if cluster.IsNominated(pod) || len(cluster.ProvisionablePods()) != 1 {
		t.Error("nomination did not expire after its TTL")
	}
	// Binding ends a fresh nomination too.
	cluster.Nominate(pod, state.NodeClaimID("nc"), 20*time.Second)
	bound := pod.DeepCopy()
	bound.Spec.NodeName = "somewhere"
	cluster.UpdatePod(bound)
	if cluster.IsNominated(bound) {
		t.Error("a bound pod is still nominated")
	}
}

func TestSnapshotOfADeletingNode(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	cluster := state.NewCluster(clk, env.Client)
	nc := test.MakeNodeClaim("old").NodePool("pool").ProviderID("fake://old").Obj()
	cluster.UpdateNodeClaim(nc)
	cluster.UpdateNode(test.MakeNode("old-node").ProviderID("fake://old").
		Taint(corev1.Taint{Key: karpv1.DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}).Obj())
	moved := test.MakePod("moved").NodeName("old-node").Obj()
	staying := test.MakePod("staying").NodeName("old-node").Obj()
	cluster.UpdatePod(moved)
	cluster.UpdatePod(staying)
	cluster.UpdateNodeClaim(test.MakeNodeClaim("new").NodePool("pool").Obj())
	cluster.Nominate(moved, state.NodeClaimID("new"), time.Minute)

	nodes, stateNodes := cluster.Snapshot()
	for i, n := range nodes {
		var names []string
		for _, p := range n.Pods {
			names = append(names, p.Name)
		}
		got := strings.Join(names, ",")
		switch stateNodes[i].ID() {
		case state.NodeClaimID("old"):
			if !n.MarkedForDeletion || got != "staying" {
				t.Errorf("deleting node: marked=%v pods=%s; want marked with only the pod not yet placed elsewhere", n.MarkedForDeletion, got)
			}
		case state.NodeClaimID("new"):
			if got != "moved" {
				t.Errorf("new node pods = %s, want the nominated pod", got)
			}
		}
	}
	cluster.UnmarkForDeletion(state.NodeClaimID("old"))
	cluster.MarkForDeletion(state.NodeClaimID("new"))
	if sn := nodeNamed(cluster, "new"); sn == nil || !sn.MarkedForDeletion {
		t.Error("MarkForDeletion did not mark the node")
	}
}

func TestNodeMetrics(t *testing.T) {
	cleanup(t)
	clk := clocktesting.NewFakeClock(time.Now())
	cluster := state.NewCluster(clk, env.Client)
	cluster.UpdateNode(test.MakeNode("n").Label(karpv1.NodePoolLabelKey, "pool").
		Label(corev1.LabelInstanceTypeStable, "m5.large").Allocatable("cpu", "2", "memory", "8Gi").Obj())
	cluster.UpdatePod(test.MakePod("a").NodeName("n").Requests("cpu", "500m").Obj())
	cluster.UpdatePod(test.MakePod("d").NodeName("n").Requests("cpu", "100m").Owner("DaemonSet", "ds", "u").Obj())
	reg := prometheus.NewPedanticRegistry()
	if err := state.Register(reg, cluster); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP karpenter_nodes_total_daemon_requests Node total daemon requests are the resource requested by DaemonSet pods bound to nodes.
# TYPE karpenter_nodes_total_daemon_requests gauge
karpenter_nodes_total_daemon_requests{arch="",capacity_type="",instance_type="m5.large",managed="false",node_name="n",nodepool="pool",os="",phase="",region="",resource_type="cpu",windows_build="",zone=""} 0.1
karpenter_nodes_total_daemon_requests{arch="",capacity_type="",instance_type="m5.large",managed="false",node_name="n",nodepool="pool",os="",phase="",region="",resource_type="pods",windows_build="",zone=""} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "karpenter_nodes_total_daemon_requests"); err != nil {
		t.Error(err)
	}
	wantUtilization := `
# HELP karpenter_cluster_utilization_percent Utilization of allocatable resources by pod requests
# TYPE karpenter_cluster_utilization_percent gauge
karpenter_cluster_utilization_percent{resource_type="cpu"} 30
karpenter_cluster_utilization_percent{resource_type="memory"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(wantUtilization), "karpenter_cluster_utilization_percent"); err != nil {
		t.Error(err)
	}
	priced := prometheus.NewPedanticRegistry()
	prices := func(instanceType, capacityType, zone string) (float64, bool) {
		return map[string]float64{"m5.large": 0.096}[instanceType], instanceType == "m5.large"
	}
	if err := priced.Register(state.NewCollector(cluster, state.WithPrices(prices))); err != nil {
		t.Fatal(err)
	}
	wantCost := `
# HELP karpenter_nodepools_cost_total Total cost of the nodepool from Karpenter's perspective. Units are determined by the cloud provider. Not an authoritative source for billing.
# TYPE karpenter_nodepools_cost_total gauge
karpenter_nodepools_cost_total{nodepool="pool"} 0.096
`
	if err := testutil.GatherAndCompare(priced, strings.NewReader(wantCost), "karpenter_nodepools_cost_total"); err != nil {
		t.Error(err)
	}
	if got := testutil.CollectAndCount(state.NewCollector(cluster), "karpenter_nodes_allocatable"); got != 2 {
		t.Errorf("%d allocatable series, want cpu and memory", got)
	}
	wantPods := `
# HELP karpenter_pods_state Pod state is the current state of pods. This metric can be used several ways as it is labeled by the pod name, namespace, owner, node, whether the pod is scheduled, nodepool name, zone, architecture, capacity type, instance type, pod phase, pod readiness, and whether the node is Karpenter-managed.
# TYPE karpenter_pods_state gauge
karpenter_pods_state{arch="",capacity_type="",instance_type="m5.large",managed="true",name="a",namespace="default",node="n",nodepool="pool",owner="",phase="Pending",ready="false",scheduled="true",zone=""} 1
karpenter_pods_state{arch="",capacity_type="",instance_type="m5.large",managed="true",name="d",namespace="default",node="n",nodepool="pool",owner="daemonset/ds",phase="Pending",ready="false",scheduled="true",zone=""} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(wantPods), "karpenter_pods_state"); err != nil {
		t.Error(err)
	}

	// A pod that turns Ready 5s after its creation is observed once.
	created := clk.Now()
	ready := test.MakePod("ready").NodeName("n").Created(created).Phase(corev1.PodRunning).Obj()
	ready.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(created.Add(5 * time.Second))}}
	cluster.UpdatePod(ready)
	cluster.UpdatePod(ready)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "karpenter_pods_startup_duration_seconds" {
			continue
		}
		s := f.GetMetric()[0].GetSummary()
		if s.GetSampleCount() != 1 || s.GetSampleSum() != 5 {
			t.Errorf("startup summary count=%d sum=%v, want one 5s observation", s.GetSampleCount(), s.GetSampleSum())
		}
		return
	}
	t.Error("karpenter_pods_startup_duration_seconds not gathered")
}

func TestNominationsToFullNodesAreReleased(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	cluster := state.NewCluster(clk, env.Client)
	cluster.UpdateNodeClaim(test.MakeNodeClaim("launched").NodePool("pool").ProviderID("fake://l").Obj())
	cluster.UpdateNode(test.MakeNode("l").ProviderID("fake://l").Allocatable("cpu", "2", "pods", "10").Obj())
	cluster.UpdateNodeClaim(test.MakeNodeClaim("inflight").NodePool("pool").Obj())
	older := test.MakePod("older").Requests("cpu", "1").Obj()
	newer := test.MakePod("newer").Requests("cpu", "1").Obj()
	waiting := test.MakePod("waiting").Requests("cpu", "8").Obj()
	for _, p := range []*corev1.Pod{older, newer, waiting} {
		cluster.UpdatePod(p)
	}
	cluster.Nominate(older, state.NodeClaimID("launched"), time.Minute)
	clk.Step(time.Second)
	cluster.Nominate(newer, state.NodeClaimID("launched"), time.Minute)
	cluster.Nominate(waiting, state.NodeClaimID("inflight"), time.Minute)
	if got := cluster.ReleaseOvercommittedNominations(); got != 0 {
		t.Fatalf("released %d nominations while everything fits, want 0", got)
	}
	// The kube-scheduler binds some other pod to the node first: only one
	// of the two nominated pods still fits; the newer nomination goes.
	cluster.UpdatePod(test.MakePod("other").Requests("cpu", "1").NodeName("l").Obj())
	if got := cluster.ReleaseOvercommittedNominations(); got != 1 {
		t.Fatalf("released %d nominations, want 1", got)
	}
	if !cluster.IsNominated(older) || cluster.IsNominated(newer) {
		t.Errorf("older nominated=%v newer nominated=%v; want the older kept", cluster.IsNominated(older), cluster.IsNominated(newer))
	}
	if !cluster.IsNominated(waiting) {
		t.Error("a nomination to an in-flight NodeClaim was released")
	}
	if pods := cluster.ProvisionablePods(); len(pods) != 1 || pods[0].Name != "newer" {
		t.Errorf("provisionable pods = %v, want the released one", pods)
	}
}

func TestDeletedNodeClaimReleasesItsNominations(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	cluster := state.NewCluster(clk, env.Client)
	cluster.UpdateNodeClaim(test.MakeNodeClaim("refused").NodePool("pool").Obj())
	cluster.UpdateNodeClaim(test.MakeNodeClaim("other").NodePool("pool").Obj())
	mine, theirs := test.MakePod("mine").Requests("cpu", "1").Obj(), test.MakePod("theirs").Requests("cpu", "1").Obj()
	cluster.UpdatePod(mine)
	cluster.UpdatePod(theirs)
	cluster.Nominate(mine, state.NodeClaimID("refused"), 20*time.Second)
	cluster.Nominate(theirs, state.NodeClaimID("other"), 20*time.Second)
	cluster.DeleteNodeClaim("refused")
	if cluster.IsNominated(mine) {
		t.Error("a pod is still nominated to a deleted NodeClaim")
	}
	if !cluster.IsNominated(theirs) {
		t.Error("deleting one NodeClaim released a nomination to another")
	}
	if got := cluster.ProvisionablePods(); len(got) != 1 || got[0].Name != "mine" {
		t.Errorf("provisionable pods %v, want only mine", got)
	}
}

// TestOvercommittedNodeReleasesTheFillFirst: the scheduler bound an
// unhinted (fill) pod meant for another node to this one. Of the pods
// nominated here in the same solve, an unhinted one is released: the
// hinted ones keep their room in the scheduler's eyes, and the fill pod
// finds the room its alike pod left on the other node.
func TestOvercommittedNodeReleasesTheFillFirst(t *testing.T) {
	for round := range 20 {
		clk := clocktesting.NewFakeClock(time.Now())
		cluster := state.NewCluster(clk, env.Client)
		cluster.UpdateNodeClaim(test.MakeNodeClaim("a").NodePool("pool").ProviderID("fake://a").Obj())
		cluster.UpdateNode(test.MakeNode("a").ProviderID("fake://a").Allocatable("cpu", "4", "pods", "10").Obj())
		large := []*corev1.Pod{
			test.MakePod(fmt.Sprintf("large-%d-a", round)).Requests("cpu", "1500m").Obj(),
			test.MakePod(fmt.Sprintf("large-%d-b", round)).Requests("cpu", "1500m").Obj(),
		}
		fill := test.MakePod(fmt.Sprintf("fill-%d", round)).Requests("cpu", "1").Obj()
		for _, p := range append(large, fill) {
			cluster.UpdatePod(p)
		}
		// One solve: the same expiry for all three.
		cluster.Nominate(large[0], state.NodeClaimID("a"), time.Minute)
		cluster.Nominate(large[1], state.NodeClaimID("a"), time.Minute)
		cluster.NominateUnhinted(fill, state.NodeClaimID("a"), time.Minute)
		cluster.UpdatePod(test.MakePod(fmt.Sprintf("fill-elsewhere-%d", round)).Requests("cpu", "1").NodeName("a").Obj())
		if got := cluster.ReleaseOvercommittedNominations(); got != 1 {
			t.Fatalf("round %d: released %d nominations, want 1", round, got)
		}
		if cluster.IsNominated(fill) || !cluster.IsNominated(large[0]) || !cluster.IsNominated(large[1]) {
			t.Fatalf("round %d: fill nominated=%v, large nominated=%v/%v; want only the fill released", round,
				cluster.IsNominated(fill), cluster.IsNominated(large[0]), cluster.IsNominated(large[1]))
		}
	}
}

func TestPodBindingTimeMetrics(t *testing.T) {
	cleanup(t)
	clk := clocktesting.NewFakeClock(time.Now())
	cluster := state.NewCluster(clk, env.Client)
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(state.NewCollector(cluster)); err != nil {
		t.Fatal(err)
	}
	created := clk.Now().Add(-10 * time.Second)
	cluster.UpdatePod(test.MakePod("waiting").Created(created).Obj())
	want := `
# HELP karpenter_pods_unbound_time_seconds The time from pod creation until the pod is bound.
# TYPE karpenter_pods_unbound_time_seconds gauge
karpenter_pods_unbound_time_seconds{dynamic_resources="false",name="waiting",namespace="default"} 10
# HELP karpenter_pods_unstarted_time_seconds The time from pod creation until the pod is running.
# TYPE karpenter_pods_unstarted_time_seconds gauge
karpenter_pods_unstarted_time_seconds{name="waiting",namespace="default"} 10
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "karpenter_pods_unbound_time_seconds", "karpenter_pods_unstarted_time_seconds"); err != nil {
		t.Error(err)
	}

	// Bound 4s after its creation: observed once, and no longer unbound.
	before := testutil.CollectAndCount(state.PodBoundDuration)
	var sumBefore float64
	if m := histogram(t, "false"); m != nil {
		sumBefore = m.GetSampleSum()
	}
	bound := test.MakePod("waiting").Created(created).NodeName("n").Obj()
	bound.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(created.Add(4 * time.Second))}}
	cluster.UpdatePod(bound)
	cluster.UpdatePod(bound)
	m := histogram(t, "false")
	if m == nil || m.GetSampleSum()-sumBefore != 4 {
		t.Errorf("bound duration sum grew by %v, want 4 (series before: %d)", m.GetSampleSum()-sumBefore, before)
	}
	if got := testutil.CollectAndCount(state.NewCollector(cluster), "karpenter_pods_unbound_time_seconds"); got != 0 {
		t.Errorf("%d unbound series after binding, want 0", got)
	}
}

// histogram returns the bound-duration histogram of the dynamic_resources
// value, or nil.
func histogram(t *testing.T, dynamic string) *dto.Histogram {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(state.PodBoundDuration); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if l.GetName() == "dynamic_resources" && l.GetValue() == dynamic {
					return m.Histogram
				}
			}
		}
	}
	return nil
}

func TestNodeLimitsOverheadAndLifetime(t *testing.T) {
	cleanup(t)
	clk := clocktesting.NewFakeClock(time.Now())
	cluster := state.NewCluster(clk, env.Client)
	node := test.MakeNode("n").Label(karpv1.NodePoolLabelKey, "pool").
		Capacity("cpu", "2", "memory", "8Gi").Allocatable("cpu", "1900m", "memory", "7Gi").Obj()
	node.CreationTimestamp = metav1.NewTime(clk.Now().Add(-time.Hour))
	cluster.UpdateNode(node)
	cluster.UpdatePod(test.MakePod("a").NodeName("n").Limits("cpu", "1").Obj())
	cluster.UpdatePod(test.MakePod("d").NodeName("n").Limits("cpu", "200m").Owner("DaemonSet", "ds", "u").Obj())
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(state.NewCollector(cluster)); err != nil {
		t.Fatal(err)
	}
	labels := `arch="",capacity_type="",instance_type="",managed="false",node_name="n",nodepool="pool",os="",phase="",region="",`
	tail := `windows_build="",zone=""`
	want := `
# HELP karpenter_nodes_current_lifetime_seconds Node age in seconds
# TYPE karpenter_nodes_current_lifetime_seconds gauge
karpenter_nodes_current_lifetime_seconds{` + labels + tail + `} 3600
# HELP karpenter_nodes_system_overhead Node system daemon overhead are the resources reserved for system overhead, the difference between the node's capacity and allocatable values are reported by the status.
# TYPE karpenter_nodes_system_overhead gauge
karpenter_nodes_system_overhead{` + labels + `resource_type="cpu",` + tail + `} 0.1
karpenter_nodes_system_overhead{` + labels + `resource_type="memory",` + tail + `} 1.073741824e+09
# HELP karpenter_nodes_total_daemon_limits Node total daemon limits are the resources specified by DaemonSet pod limits.
# TYPE karpenter_nodes_total_daemon_limits gauge
karpenter_nodes_total_daemon_limits{` + labels + `resource_type="cpu",` + tail + `} 0.2
# HELP karpenter_nodes_total_pod_limits Node total pod limits are the resources specified by pod limits, including the DaemonSet pods.
# TYPE karpenter_nodes_total_pod_limits gauge
karpenter_nodes_total_pod_limits{` + labels + `resource_type="cpu",` + tail + `} 1.2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "karpenter_nodes_current_lifetime_seconds",
		"karpenter_nodes_system_overhead", "karpenter_nodes_total_daemon_limits", "karpenter_nodes_total_pod_limits"); err != nil {
		t.Error(err)
	}
}

func TestPodProvisioningTimeMetrics(t *testing.T) {
	cleanup(t)
	clk := clocktesting.NewFakeClock(time.Now())
	cluster := state.NewCluster(clk, env.Client)
	decided := clk.Now()
	pending := test.MakePod("placed").Created(decided.Add(-time.Minute)).Obj()
	cluster.UpdatePod(pending)
	cluster.UpdatePod(test.MakePod("unplaced").Created(decided.Add(-time.Minute)).Obj())
	cluster.Nominate(pending, "node-id", time.Minute)
	clk.Step(5 * time.Second)

	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(state.NewCollector(cluster)); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP karpenter_pods_provisioning_unbound_time_seconds The time from when Karpenter first thinks the pod can schedule until it binds. Note: this calculated from a point in memory, not by the pod creation timestamp.
# TYPE karpenter_pods_provisioning_unbound_time_seconds gauge
karpenter_pods_provisioning_unbound_time_seconds{dynamic_resources="false",name="placed",namespace="default"} 5
# HELP karpenter_pods_provisioning_unstarted_time_seconds The time from when Karpenter first thinks the pod can schedule until the pod is running. Note: this calculated from a point in memory, not by the pod creation timestamp.
# TYPE karpenter_pods_provisioning_unstarted_time_seconds gauge
karpenter_pods_provisioning_unstarted_time_seconds{name="placed",namespace="default"} 5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"karpenter_pods_provisioning_unbound_time_seconds", "karpenter_pods_provisioning_unstarted_time_seconds"); err != nil {
		t.Error(err)
	}

	// Bound 7s and Ready 9s after the placement: observed once each.
	boundBefore := histogramSum(t, state.PodProvisioningBoundDuration)
	startupBefore := histogramSum(t, state.PodProvisioningStartupDuration)
	bound := test.MakePod("placed").Created(decided.Add(-time.Minute)).NodeName("n").Phase(corev1.PodRunning).Obj()
	bound.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(decided.Add(7 * time.Second))},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(decided.Add(9 * time.Second))},
	}
	cluster.UpdatePod(bound)
	cluster.UpdatePod(bound)
	if got := histogramSum(t, state.PodProvisioningBoundDuration) - boundBefore; got != 7 {
		t.Errorf("provisioning bound duration grew by %v, want 7", got)
	}
	if got := histogramSum(t, state.PodProvisioningStartupDuration) - startupBefore; got != 9 {
		t.Errorf("provisioning startup duration grew by %v, want 9", got)
	}
	if n := testutil.CollectAndCount(state.NewCollector(cluster), "karpenter_pods_provisioning_unbound_time_seconds"); n != 0 {
		t.Errorf("%d provisioning unbound series after binding, want 0", n)
	}
}

// histogramSum is the sum of every series of a histogram collector.
func histogramSum(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		for _, m := range f.Metric {
			sum += m.GetHistogram().GetSampleSum()
		}
	}
	return sum
}
