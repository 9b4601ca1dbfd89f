package lifecycle_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/lifecycle"
	"github.com/karp-autoscaler/karp/pkg/test"
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
// not-ready taint after registration read the node. The sync removes only
// the unregistered taint, so not-ready stays gone.
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
	if err := h.Env.Client.Patch(t.Context(), registered(stored), patch); err != nil {
		t.Fatalf("sync after not-ready was lifted: %v", err)
	}
	got := getNode(t, "sync-taints")
	if len(got.Spec.Taints) != 0 {
		t.Errorf("taints %v, want none (unregistered removed, not-ready not restored)", got.Spec.Taints)
	}
}

// TestNodeSyncPatchKeepsATaintAppendedMeanwhile: the node lifecycle
// controller appended a taint after registration read the node; the sync
// applies (a test of the whole list failed here) and keeps it, and the
// taints registration adds go after it.
func TestNodeSyncPatchKeepsATaintAppendedMeanwhile(t *testing.T) {
	h.Reset(t)
	stored := newSyncNode(t, "sync-append")
	appended := stored.DeepCopy()
	unreachable := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
	appended.Spec.Taints = append(appended.Spec.Taints, unreachable)
	if err := h.Env.Client.Update(t.Context(), appended); err != nil {
		t.Fatal(err)
	}
	want := registered(stored)
	want.Spec.Taints = append(want.Spec.Taints, karpv1.BatchHoldNoScheduleTaint)
	patch, err := lifecycle.NodeSyncPatch(stored, want)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Env.Client.Patch(t.Context(), want.DeepCopy(), patch); err != nil {
		t.Fatalf("sync after a taint was appended: %v", err)
	}
	got := getNode(t, "sync-append")
	keys := []string{}
	for _, taint := range got.Spec.Taints {
		keys = append(keys, taint.Key)
	}
	if !slices.Equal(keys, []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, karpv1.BatchHoldTaintKey}) {
		t.Errorf("taints %v, want not-ready, the appended unreachable, then the batch hold", keys)
	}
}

// TestNodeSyncPatchFailsWhenATaintBeforeItsOwnWent: a taint ahead of the
// one the sync removes was removed meanwhile, so the indexes moved; the
// sync fails (and is retried from a fresh copy) instead of removing
// another taint.
func TestNodeSyncPatchFailsWhenATaintBeforeItsOwnWent(t *testing.T) {
	h.Reset(t)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "sync-shift", Labels: map[string]string{"kubernetes.io/hostname": "sync-shift"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
			{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute},
			{Key: "example.com/keep", Effect: corev1.TaintEffectNoSchedule},
		}},
	}
	h.Create(t, node)
	stored := getNode(t, "sync-shift")
	lifted := stored.DeepCopy()
	lifted.Spec.Taints = lifted.Spec.Taints[1:]
	if err := h.Env.Client.Update(t.Context(), lifted); err != nil {
		t.Fatal(err)
	}
	patch, err := lifecycle.NodeSyncPatch(stored, registered(stored))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Env.Client.Patch(t.Context(), registered(stored), patch); err == nil {
		t.Fatal("a sync computed from shifted taints succeeded")
	}
	got := getNode(t, "sync-shift")
	if len(got.Spec.Taints) != 2 || got.Spec.Taints[0].Key != karpv1.UnregisteredTaintKey || got.Spec.Taints[1].Key != "example.com/keep" {
		t.Errorf("taints %v, want unregistered and example.com/keep untouched", got.Spec.Taints)
	}
}

// laggingCache serves one Node as it was before a later update, as an
// informer cache that has not caught up yet does.
type laggingCache struct {
	client.Client
	stale *corev1.Node
}

func (l laggingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := l.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if nodes, ok := list.(*corev1.NodeList); ok {
		for i := range nodes.Items {
			if nodes.Items[i].Name == l.stale.Name {
				nodes.Items[i] = *l.stale.DeepCopy()
			}
		}
	}
	return nil
}

// TestRegistrationRetriesFromTheAPIWhenTheCacheLags: the node lifecycle
// controller lifted not-ready after the cache's copy was taken; the sync
// from the stale copy fails, and the retry from the API's copy registers
// the node without restoring the taint.
func TestRegistrationRetriesFromTheAPIWhenTheCacheLags(t *testing.T) {
	for _, withAPIReader := range []bool{false, true} {
		cp, _ := setup(t)
		name := fmt.Sprintf("lag-%t", withAPIReader)
		nc := launched(t, lifecycle.NewController(h.Client, cp, h.Clock, h.Recorder), test.MakeNodeClaim(name).NodePool("default").Obj())
		// The Node as the cache still has it: unregistered and not-ready.
		// not-ready first: its lift moves the unregistered taint, so a
		// sync from the stale copy cannot apply.
		stale := test.MakeNode(name + "-node").ProviderID(nc.Status.ProviderID).
			Taint(corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}).
			Taint(karpv1.UnregisteredNoExecuteTaint).Obj()
		h.Create(t, stale.DeepCopy())
		stale = getNode(t, name+"-node")
		lifted := stale.DeepCopy()
		lifted.Spec.Taints = slices.DeleteFunc(lifted.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
		if err := h.Env.Client.Update(t.Context(), lifted); err != nil {
			t.Fatal(err)
		}
		c := lifecycle.NewController(laggingCache{Client: h.Client, stale: stale}, cp, h.Clock, h.Recorder)
		if withAPIReader {
			c = c.WithAPIReader(h.APIReader)
		}
		err := reconcileNodeClaim(t, c, nc.Name)
		got := &corev1.Node{}
		if getErr := h.APIReader.Get(t.Context(), client.ObjectKey{Name: name + "-node"}, got); getErr != nil {
			t.Fatal(getErr)
		}
		if slices.ContainsFunc(got.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady }) {
			t.Errorf("withAPIReader=%t: not-ready taint restored: %v", withAPIReader, got.Spec.Taints)
		}
		registered := got.Labels[karpv1.NodeRegisteredLabelKey] == "true"
		if withAPIReader && (err != nil || !registered) {
			t.Errorf("with the API reader: err %v, registered label %t; want registered at once", err, registered)
		}
		if !withAPIReader && (err == nil || registered) {
			t.Errorf("without the API reader: err %v, registered label %t; want a failed sync to retry", err, registered)
		}
	}
}
