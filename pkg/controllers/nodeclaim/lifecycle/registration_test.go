package lifecycle_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/lifecycle"
	"github.com/karp-autoscaler/karp/pkg/test"
)

var (
	dedicated = corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	agentBoot = corev1.Taint{Key: "agent.example.com/booting", Effect: corev1.TaintEffectNoSchedule}
)

func TestRegistrationSyncsTheNodeAndLiftsTheUnregisteredTaint(t *testing.T) {
	_, c := setup(t)
	nc := launched(t, c, test.MakeNodeClaim("reg").NodePool("default").Label("team", "a").
		Annotations(map[string]string{"example.com/owner": "ops"}).
		Taint(dedicated).StartupTaint(agentBoot).Obj())

	// No Node yet: waiting, not failing.
	if cond := condition(nc, karpv1.ConditionTypeRegistered); cond.Reason != lifecycle.ReasonNodeNotFound {
		t.Errorf("Registered before the Node joined = %s/%s, want Unknown/%s", cond.Status, cond.Reason, lifecycle.ReasonNodeNotFound)
	}

	nodeFor(t, nc, "reg-node", func(n *corev1.Node) { n.Labels["kubelet.example.com/set"] = "yes" })
	mustReconcile(t, c, nc.Name)

	node := getNode(t, "reg-node")
	if !slices.Contains(node.Finalizers, karpv1.TerminationFinalizer) {
		t.Errorf("node finalizers = %v", node.Finalizers)
	}
	if len(node.OwnerReferences) != 1 || node.OwnerReferences[0].UID != nc.UID || node.OwnerReferences[0].Kind != "NodeClaim" {
		t.Errorf("node owner references = %+v, want the NodeClaim", node.OwnerReferences)
	}
	for _, want := range []corev1.Taint{dedicated, agentBoot} {
		if !slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&want) }) {
			t.Errorf("node taints %v lack %v", node.Spec.Taints, want)
		}
	}
	if slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == karpv1.UnregisteredTaintKey }) {
		t.Errorf("unregistered taint still on node: %v", node.Spec.Taints)
	}
	for key, want := range map[string]string{
		"team":                         "a",
		karpv1.NodePoolLabelKey:        "default",
		karpv1.NodeRegisteredLabelKey:  "true",
		"kubelet.example.com/set":      "yes",
		corev1.LabelInstanceTypeStable: nc.Labels[corev1.LabelInstanceTypeStable],
	} {
		if node.Labels[key] != want {
			t.Errorf("node label %s = %q, want %q", key, node.Labels[key], want)
		}
	}
	if node.Annotations["example.com/owner"] != "ops" {
		t.Errorf("node annotations = %v", node.Annotations)
	}

	got := getNodeClaim(t, nc.Name)
	if got.Status.NodeName != "reg-node" {
		t.Errorf("status.nodeName = %q", got.Status.NodeName)
	}
	if cond := condition(got, karpv1.ConditionTypeRegistered); cond.Status != metav1.ConditionTrue {
		t.Errorf("Registered = %+v, want True", cond)
	}
	// The startup taint is still there, so the node is not initialized.
	if cond := condition(got, karpv1.ConditionTypeInitialized); cond.Reason != lifecycle.ReasonStartupTaintsExist {
		t.Errorf("Initialized = %s/%s, want Unknown/%s", cond.Status, cond.Reason, lifecycle.ReasonStartupTaintsExist)
	}
	h.WaitForEvent(t, "NodeClaim", nc.Name, lifecycle.ReasonRegistered)

	// The agent finishes and removes its startup taint.
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == agentBoot.Key })
	if err := h.Env.Client.Update(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	mustReconcile(t, c, nc.Name)
	got = getNodeClaim(t, nc.Name)
	if !got.StatusConditions().IsTrue(karpv1.ConditionTypeInitialized, karpv1.ConditionTypeReady) {
		t.Errorf("conditions = %+v, want Initialized and Ready True", got.Status.Conditions)
	}
	if getNode(t, "reg-node").Labels[karpv1.NodeInitializedLabelKey] != "true" {
		t.Error("node not labelled initialized")
	}
}

func TestRegistrationRespectsDoNotSyncTaints(t *testing.T) {
	_, c := setup(t)
	nc := launched(t, c, test.MakeNodeClaim("nosync").NodePool("default").Taint(dedicated).Obj())
	nodeFor(t, nc, "nosync-node", func(n *corev1.Node) { n.Labels[karpv1.NodeDoNotSyncTaintsLabelKey] = "true" })
	mustReconcile(t, c, nc.Name)
	node := getNode(t, "nosync-node")
	if slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == dedicated.Key }) {
		t.Errorf("taint synced despite %s: %v", karpv1.NodeDoNotSyncTaintsLabelKey, node.Spec.Taints)
	}
	if len(node.Spec.Taints) != 0 {
		t.Errorf("node taints = %v, want the unregistered taint lifted and nothing added", node.Spec.Taints)
	}
}

func TestRegistrationWithoutTheUnregisteredTaintWarns(t *testing.T) {
	_, c := setup(t)
	nc := launched(t, c, test.MakeNodeClaim("notaint").NodePool("default").Obj())
	nodeFor(t, nc, "notaint-node", func(n *corev1.Node) { n.Spec.Taints = nil })
	mustReconcile(t, c, nc.Name)
	if cond := condition(getNodeClaim(t, nc.Name), karpv1.ConditionTypeRegistered); cond.Status != metav1.ConditionTrue {
		t.Errorf("Registered = %+v, want True", cond)
	}
	h.WaitForEvent(t, "Node", "notaint-node", lifecycle.ReasonUnregisteredTaintMissing)
}

func TestRegistrationWithTwoNodesForOneInstanceFails(t *testing.T) {
	_, c := setup(t)
	nc := launched(t, c, test.MakeNodeClaim("twins").NodePool("default").Obj())
	nodeFor(t, nc, "twin-a")
	nodeFor(t, nc, "twin-b")
	mustReconcile(t, c, nc.Name)
	cond := condition(getNodeClaim(t, nc.Name), karpv1.ConditionTypeRegistered)
	if cond.Status != metav1.ConditionFalse || cond.Reason != lifecycle.ReasonMultipleNodesFound {
		t.Errorf("Registered = %s/%s, want False/%s", cond.Status, cond.Reason, lifecycle.ReasonMultipleNodesFound)
	}
}

// TestRegistrationHoldsANodeOfAMultiNodeBatch: a NodeClaim of a
// provisioning batch trades the unregistered taint for the batch hold in
// the registration write, so the node is never open to the scheduler
// before its batch; a NodeClaim of no batch gets no hold.
func TestRegistrationHoldsANodeOfAMultiNodeBatch(t *testing.T) {
	_, c := setup(t)
	batched := launched(t, c, test.MakeNodeClaim("held").NodePool("default").
		Annotations(map[string]string{karpv1.ProvisioningBatchAnnotationKey: "b1"}).Obj())
	alone := launched(t, c, test.MakeNodeClaim("alone").NodePool("default").Obj())
	nodeFor(t, batched, "held-node")
	nodeFor(t, alone, "alone-node")
	mustReconcile(t, c, batched.Name)
	mustReconcile(t, c, alone.Name)

	held := getNode(t, "held-node")
	if !slices.ContainsFunc(held.Spec.Taints, karpv1.IsBatchHoldTaint) {
		t.Errorf("batched node taints %v lack the batch hold", held.Spec.Taints)
	}
	if slices.ContainsFunc(held.Spec.Taints, func(t corev1.Taint) bool { return t.Key == karpv1.UnregisteredTaintKey }) {
		t.Errorf("unregistered taint still on the batched node: %v", held.Spec.Taints)
	}
	if open := getNode(t, "alone-node"); len(open.Spec.Taints) != 0 {
		t.Errorf("lone node taints = %v, want none", open.Spec.Taints)
	}
	// A second pass (registration already done) does not put it back
	// once lifted.
	held.Spec.Taints = nil
	if err := h.Env.Client.Update(t.Context(), held); err != nil {
		t.Fatal(err)
	}
	mustReconcile(t, c, batched.Name)
	if got := getNode(t, "held-node"); slices.ContainsFunc(got.Spec.Taints, karpv1.IsBatchHoldTaint) {
		t.Errorf("batch hold put back after it was lifted: %v", got.Spec.Taints)
	}
}
