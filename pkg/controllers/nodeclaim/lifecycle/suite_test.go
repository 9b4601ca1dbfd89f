package lifecycle_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/lifecycle"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

var h *operatortest.Harness

func TestMain(m *testing.M) { operatortest.Main(m, &h) }

// setup resets the cluster and returns a fresh provider and controller.
func setup(t *testing.T) (*fake.CloudProvider, *lifecycle.Controller) {
	t.Helper()
	h.Reset(t)
	cp := fake.New()
	return cp, lifecycle.NewController(h.Client, cp, h.Clock, h.Recorder)
}

// createNodeClaim creates the NodeClaim and moves the clock to its
// creation time, so liveness deadlines count from there.
func createNodeClaim(t *testing.T, nc *karpv1.NodeClaim) *karpv1.NodeClaim {
	t.Helper()
	h.Create(t, nc)
	h.Clock.SetTime(nc.CreationTimestamp.Time)
	return nc
}

func reconcileNodeClaim(t *testing.T, c *lifecycle.Controller, name string) error {
	t.Helper()
	_, err := operatortest.Reconcile(t, h, c, name)
	return err
}

func mustReconcile(t *testing.T, c *lifecycle.Controller, name string) {
	t.Helper()
	if err := reconcileNodeClaim(t, c, name); err != nil {
		t.Fatalf("reconciling %s: %v", name, err)
	}
}

func getNodeClaim(t *testing.T, name string) *karpv1.NodeClaim {
	t.Helper()
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if !h.Get(t, nc) {
		t.Fatalf("nodeclaim %s does not exist", name)
	}
	return nc
}

func getNode(t *testing.T, name string) *corev1.Node {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if !h.Get(t, node) {
		t.Fatalf("node %s does not exist", name)
	}
	return node
}

func condition(nc *karpv1.NodeClaim, conditionType string) metav1.Condition {
	if c := nc.StatusConditions().Get(conditionType); c != nil {
		return *c
	}
	return metav1.Condition{Type: conditionType, Status: "<missing>"}
}

// launched creates a NodeClaim and reconciles it once, returning it launched.
func launched(t *testing.T, c *lifecycle.Controller, nc *karpv1.NodeClaim) *karpv1.NodeClaim {
	t.Helper()
	createNodeClaim(t, nc)
	mustReconcile(t, c, nc.Name)
	got := getNodeClaim(t, nc.Name)
	if cond := condition(got, karpv1.ConditionTypeLaunched); cond.Status != metav1.ConditionTrue {
		t.Fatalf("nodeclaim not launched: %+v", cond)
	}
	return got
}

// nodeFor creates the kubelet's Node for a launched NodeClaim: the
// unregistered taint, Ready, and the NodeClaim's capacity.
func nodeFor(t *testing.T, nc *karpv1.NodeClaim, name string, mutate ...func(*corev1.Node)) *corev1.Node {
	t.Helper()
	node := test.MakeNode(name).ProviderID(nc.Status.ProviderID).Taint(karpv1.UnregisteredNoExecuteTaint).Obj()
	node.Status.Capacity = nc.Status.Capacity.DeepCopy()
	node.Status.Allocatable = nc.Status.Allocatable.DeepCopy()
	for _, m := range mutate {
		m(node)
	}
	h.Create(t, node)
	// The API server's TaintNodesByCondition admission adds the not-ready
	// taint to new Nodes; kube-controller-manager (absent here) lifts it
	// once the Node is Ready. Do its part.
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
	if err := h.Env.Client.Update(t.Context(), node); err != nil {
		t.Fatalf("lifting the not-ready taint: %v", err)
	}
	return node
}
