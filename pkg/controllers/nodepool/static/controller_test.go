package static_test

import (
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodepool/static"
	statecontrollers "github.com/karp-autoscaler/karp/pkg/controllers/state"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/controllertest"
)

const zone = "test-zone-1"

var (
	smallType = fake.NewInstanceType(fake.InstanceTypeOptions{Name: "small", Resources: test.ResourceList("cpu", "2", "memory", "4Gi", "pods", "10"),
		Offerings: []*cloudprovider.Offering{{Zone: zone, CapacityType: karpv1.CapacityTypeOnDemand, Price: 0.10, Available: true}}})
	largeType = fake.NewInstanceType(fake.InstanceTypeOptions{Name: "large", Resources: test.ResourceList("cpu", "8", "memory", "16Gi", "pods", "40"),
		Offerings: []*cloudprovider.Offering{{Zone: zone, CapacityType: karpv1.CapacityTypeOnDemand, Price: 1.00, Available: true}}})
)

// harness is one test's world (controllertest.Harness) plus the static
// controller over its cached client and cluster state.
type harness struct {
	*controllertest.Harness
	controller *static.Controller
}

func newHarness(t *testing.T) *harness {
	base := controllertest.New(t, env, statecontrollers.Register, fake.New(smallType, largeType))
	return &harness{Harness: base, controller: static.NewController(base.Manager.GetClient(), base.Provider, base.Cluster,
		base.Clock, base.Recorder, simulation.Options{})}
}

// reconcile runs one reconcile of the NodePool as the API server has it,
// once the cluster state is synced.
func (h *harness) reconcile(name string) {
	h.T.Helper()
	h.StateSynced()
	np := h.nodePool(name)
	h.Eventually("NodePool "+name+" cached at its version", func() bool {
		cached := &karpv1.NodePool{}
		return h.Manager.GetClient().Get(h.Ctx, types.NamespacedName{Name: name}, cached) == nil &&
			cached.ResourceVersion == np.ResourceVersion
	})
	if _, err := h.controller.Reconcile(h.Ctx, np); err != nil {
		h.T.Fatalf("reconcile: %v", err)
	}
}

func (h *harness) nodePool(name string) *karpv1.NodePool {
	h.T.Helper()
	np := &karpv1.NodePool{}
	if err := h.Client.Get(h.Ctx, types.NamespacedName{Name: name}, np); err != nil {
		h.T.Fatalf("getting NodePool %s: %v", name, err)
	}
	return np
}

// nodeClaims lists the NodePool's NodeClaims that are not being deleted.
func (h *harness) nodeClaims(pool string) []karpv1.NodeClaim {
	h.T.Helper()
	var list karpv1.NodeClaimList
	if err := h.Client.List(h.Ctx, &list, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}); err != nil {
		h.T.Fatalf("listing nodeclaims: %v", err)
	}
	var out []karpv1.NodeClaim
	for _, nc := range list.Items {
		if nc.DeletionTimestamp == nil {
			out = append(out, nc)
		}
	}
	return out
}

// scale sets spec.replicas through the scale subresource, as kubectl scale
// does.
func (h *harness) scale(name string, replicas int32) {
	h.T.Helper()
	np := h.nodePool(name)
	scale := &autoscalingv1.Scale{}
	if err := h.Client.SubResource("scale").Get(h.Ctx, np, scale); err != nil {
		h.T.Fatalf("getting scale: %v", err)
	}
	scale.Spec.Replicas = replicas
	if err := h.Client.SubResource("scale").Update(h.Ctx, np, client.WithSubResourceBody(scale)); err != nil {
		h.T.Fatalf("updating scale: %v", err)
	}
}

// served returns the ReplicasServed condition.
func (h *harness) served(name string) *metav1.Condition {
	return h.nodePool(name).StatusConditions().Get(karpv1.ConditionTypeReplicasServed)
}

// initialize marks the NodeClaim launched, registered and initialized,
// with a Ready Node, as the lifecycle controller would, and waits for the
// state to see it.
func (h *harness) initialize(nc *karpv1.NodeClaim) {
	h.T.Helper()
	providerID := "fake://" + nc.Name
	node := test.MakeNode(nc.Name).Labels(map[string]string{karpv1.NodePoolLabelKey: nc.Labels[karpv1.NodePoolLabelKey],
		corev1.LabelInstanceTypeStable: smallType.Name}).ProviderID(providerID).Obj()
	h.Create(node)
	node.Status.Capacity, node.Status.Allocatable = smallType.Capacity, smallType.Allocatable
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if err := h.Client.Status().Update(h.Ctx, node); err != nil {
		h.T.Fatalf("updating node status: %v", err)
	}
	nc.Status.ProviderID, nc.Status.NodeName = providerID, nc.Name
	for _, c := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized} {
		nc.StatusConditions().SetTrue(c)
	}
	if err := h.Client.Status().Update(h.Ctx, nc); err != nil {
		h.T.Fatalf("initializing nodeclaim: %v", err)
	}
	h.Eventually("nodeclaim "+nc.Name+" initialized in state", func() bool {
		for _, sn := range h.Cluster.Nodes() {
			if sn.NodeClaim != nil && sn.NodeClaim.Name == nc.Name && sn.Initialized() {
				return true
			}
		}
		return false
	})
}

// TestStaticNodePoolKeepsItsReplicas: a static NodePool gets its replicas
// as NodeClaims of its template on its cheapest type, owned by it; a
// second reconcile before the cache catches up creates no more; scaled
// down through the scale subresource, the surplus (the not yet initialized
// first) is deleted, and with its replicas initialized, ReplicasServed is
// True.
func TestStaticNodePoolKeepsItsReplicas(t *testing.T) {
	h := newHarness(t)
	np := h.ReadyNodePool(test.MakeNodePool("static").Replicas(3).Obj())
	h.reconcile(np.Name)
	// At once, before any informer event: the state holds what was created.
	if _, err := h.controller.Reconcile(h.Ctx, h.nodePool(np.Name)); err != nil {
		t.Fatal(err)
	}
	claims := h.nodeClaims(np.Name)
	if len(claims) != 3 {
		t.Fatalf("%d NodeClaims, want 3", len(claims))
	}
	for _, nc := range claims {
		if len(nc.OwnerReferences) != 1 || nc.OwnerReferences[0].UID != np.UID {
			t.Errorf("NodeClaim %s owners = %+v, want the NodePool", nc.Name, nc.OwnerReferences)
		}
		var types []string
		for _, r := range nc.Spec.Requirements {
			if r.Key == corev1.LabelInstanceTypeStable {
				types = r.Values
			}
		}
		if len(types) == 0 || types[0] != smallType.Name {
			t.Errorf("NodeClaim %s instance types %v, want %s first", nc.Name, types, smallType.Name)
		}
	}
	if c := h.served(np.Name); c == nil || c.Status != metav1.ConditionFalse || c.Reason != static.ReasonScalingUp {
		t.Errorf("ReplicasServed = %+v, want False/%s", c, static.ReasonScalingUp)
	}
	h.EventNote(np, static.ReasonScalingUp)

	for i := range claims {
		if i < 2 {
			h.initialize(&claims[i])
		}
	}
	h.reconcile(np.Name)
	if c := h.served(np.Name); c == nil || c.Reason != static.ReasonScalingUp {
		t.Errorf("ReplicasServed = %+v with 2 of 3 initialized, want False/%s", c, static.ReasonScalingUp)
	}
	// Scaled to 2: the NodeClaim not initialized goes.
	h.scale(np.Name, 2)
	h.reconcile(np.Name)
	left := h.nodeClaims(np.Name)
	if len(left) != 2 {
		t.Fatalf("%d NodeClaims after scaling to 2, want 2", len(left))
	}
	for _, nc := range left {
		if nc.Name == claims[2].Name {
			t.Errorf("kept %s, the one not initialized, want it deleted", nc.Name)
		}
	}
	if c := h.served(np.Name); c == nil || c.Reason != static.ReasonScalingDown {
		t.Errorf("ReplicasServed = %+v, want False/%s", c, static.ReasonScalingDown)
	}
	h.EventNote(np, static.ReasonScalingDown)
	// The deleted NodeClaim is leaving: it is not replaced, no other goes,
	// and the NodePool has its replicas.
	h.reconcile(np.Name)
	if n := len(h.nodeClaims(np.Name)); n != 2 {
		t.Errorf("%d NodeClaims after another reconcile, want 2", n)
	}
	if c := h.served(np.Name); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("ReplicasServed = %+v, want True", c)
	}
}

// TestStaticNodePoolNodeLimit: limits.nodes caps a static NodePool below
// its replicas, and a warning event and ReplicasServed say so.
func TestStaticNodePoolNodeLimit(t *testing.T) {
	h := newHarness(t)
	np := h.ReadyNodePool(test.MakeNodePool("capped").Replicas(5).Limits(test.ResourceList("nodes", "2")).Obj())
	h.reconcile(np.Name)
	claims := h.nodeClaims(np.Name)
	if len(claims) != 2 {
		t.Fatalf("%d NodeClaims, want 2 (the node limit)", len(claims))
	}
	if note := h.EventNote(np, static.ReasonNodeLimitReached); note == "" {
		t.Error("NodeLimitReached event without a note")
	}
	for i := range claims {
		h.initialize(&claims[i])
	}
	h.reconcile(np.Name)
	if n := len(h.nodeClaims(np.Name)); n != 2 {
		t.Errorf("%d NodeClaims, want still 2", n)
	}
	if c := h.served(np.Name); c == nil || c.Status != metav1.ConditionFalse || c.Reason != static.ReasonNodeLimitReached {
		t.Errorf("ReplicasServed = %+v, want False/%s", c, static.ReasonNodeLimitReached)
	}
}

// TestStaticNodePoolNotReadyLaunchesNothing: a static NodePool that is not
// Ready gets no NodeClaim, and ReplicasServed says why.
func TestStaticNodePoolNotReadyLaunchesNothing(t *testing.T) {
	h := newHarness(t)
	np := test.MakeNodePool("unready").Replicas(2).Obj()
	h.Create(np)
	h.Eventually("NodePool in state", func() bool { return len(h.Cluster.NodePools()) == 1 })
	h.reconcile(np.Name)
	if n := len(h.nodeClaims(np.Name)); n != 0 {
		t.Errorf("%d NodeClaims, want none", n)
	}
	if c := h.served(np.Name); c == nil || c.Reason != static.ReasonNodePoolNotReady {
		t.Errorf("ReplicasServed = %+v, want False/%s", c, static.ReasonNodePoolNotReady)
	}
}

// TestStaticNodePoolWaitsForADisruptionStart: while the disruption
// controller starts a command on one of the NodePool's nodes (its
// replacement may not be counted yet), nothing is decided; afterwards the
// surplus goes.
func TestStaticNodePoolWaitsForADisruptionStart(t *testing.T) {
	h := newHarness(t)
	np := h.ReadyNodePool(test.MakeNodePool("static").Replicas(2).Obj())
	h.reconcile(np.Name)
	claims := h.nodeClaims(np.Name)
	if len(claims) != 2 {
		t.Fatalf("%d NodeClaims, want 2", len(claims))
	}
	h.scale(np.Name, 1)
	id := "nodeclaim/" + claims[0].Name
	h.Cluster.HoldDisruptionStart(id)
	h.reconcile(np.Name)
	if n := len(h.nodeClaims(np.Name)); n != 2 {
		t.Fatalf("%d NodeClaims during a disruption start, want 2 (nothing decided)", n)
	}
	h.Cluster.ReleaseDisruptionStart(id)
	h.reconcile(np.Name)
	if n := len(h.nodeClaims(np.Name)); n != 1 {
		t.Errorf("%d NodeClaims after the start, want 1", n)
	}
}

// TestDynamicNodePoolIsLeftAlone: a NodePool without replicas gets no
// NodeClaim and no ReplicasServed.
func TestDynamicNodePoolIsLeftAlone(t *testing.T) {
	h := newHarness(t)
	np := h.ReadyNodePool(test.MakeNodePool("dynamic").Obj())
	h.reconcile(np.Name)
	if n := len(h.nodeClaims(np.Name)); n != 0 {
		t.Errorf("%d NodeClaims, want none", n)
	}
	if c := h.served(np.Name); c != nil {
		t.Errorf("ReplicasServed = %+v, want none", c)
	}
}
