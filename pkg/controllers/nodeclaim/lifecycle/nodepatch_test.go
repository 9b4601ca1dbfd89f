package lifecycle_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/lifecycle"
)

func newSyncNode(t *testing.T, name string) *corev1.Node {
	t.Helper()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute},
			{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
		}},
	}
	h.Create(t, node)
	return node
}

// registered is what registration wants the node to look like.
func registered(stored *corev1.Node) *corev1.Node {
	node := stored.DeepCopy()
	node.Labels["example.com/team"] = "x" // a key needing a JSON-pointer escape
	node.Labels[karpv1.NodeRegisteredLabelKey] = "true"
	node.Annotations = map[string]string{"example.com/owner": "ops"}
	node.Finalizers = append(node.Finalizers, karpv1.TerminationFinalizer)
	node.Spec.Taints = slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool { return t.Key == karpv1.UnregisteredTaintKey })
	return node
}

// TestNodeSyncPatchSurvivesStatusUpdates: the node's status changed after
// registration read it (a heartbeat); the sync still applies, where an
// optimistic lock on the whole object would conflict.
func TestNodeSyncPatchSurvivesStatusUpdates(t *testing.T) {
	h.Reset(t)
	stored := newSyncNode(t, "sync-status")
	heartbeat := stored.DeepCopy()
	heartbeat.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if err := h.Env.Client.Status().Update(t.Context(), heartbeat); err != nil {
		t.Fatal(err)
	}
	patch, err := lifecycle.NodeSyncPatch(stored, registered(stored))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Env.Client.Patch(t.Context(), registered(stored), patch); err != nil {
		t.Fatalf("sync after a status update: %v", err)
	}
	got := getNode(t, "sync-status")
	if got.Labels["example.com/team"] != "x" || got.Labels[karpv1.NodeRegisteredLabelKey] != "true" || got.Annotations["example.com/owner"] != "ops" {
		t.Errorf("labels %v annotations %v", got.Labels, got.Annotations)
	}
	if !slices.Contains(got.Finalizers, karpv1.TerminationFinalizer) {
		t.Errorf("finalizers %v", got.Finalizers)
	}
	if len(got.Spec.Taints) != 1 || got.Spec.Taints[0].Key != corev1.TaintNodeNotReady {
		t.Errorf("taints %v, want only the not-ready taint", got.Spec.Taints)
	}
}

// TestNodeSyncPatchNeverRestoresARemovedTaint: someone removed the
// not-ready taint after registration read the node; the sync fails (and
// is retried) rather than putting it back.
func TestNodeSyncPatchNeverRestoresARemovedTaint(t *testing.T) {
	h.Reset(t)
	stored := newSyncNode(t, "sync-taints")
	lifted := stored.DeepCopy()
	lifted.Spec.Taints = lifted.Spec.Taints[:1]
	if err := h.Env.Client.Update(t.Context(), lifted); err != nil {
		t.Fatal(err)
	}
	patch, err := lifecycle.NodeSyncPatch(stored, registered(stored))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Env.Client.Patch(t.Context(), registered(stored), patch); err == nil {
		t.Fatal("a sync computed from stale taints succeeded")
	}
	got := getNode(t, "sync-taints")
	if slices.ContainsFunc(got.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady }) {
		t.Errorf("not-ready taint restored: %v", got.Spec.Taints)
	}
}
