package capacitybuffer_test

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1beta1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1beta1"
)

// The tests in this file follow a buffer through the changes a user makes
// after creating it (upstream Karpenter's regression specs "Lifecycle" and
// "Edge Cases", see docs/upstream-regression-coverage.md).

// update writes the buffer's spec as mutate leaves it.
func update(t *testing.T, cb *autoscalingv1beta1.CapacityBuffer, mutate func(*autoscalingv1beta1.CapacityBuffer)) {
	t.Helper()
	got := &autoscalingv1beta1.CapacityBuffer{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(cb), got); err != nil {
		t.Fatal(err)
	}
	mutate(got)
	if err := env.Client.Update(t.Context(), got); err != nil {
		t.Fatalf("updating CapacityBuffer %s: %v", cb.Name, err)
	}
}

// wantReplicas checks status.replicas, ReadyForProvisioning and the
// virtual pods the provisioner is given.
func (f *fixture) wantReplicas(got *autoscalingv1beta1.CapacityBuffer, want int32) {
	f.t.Helper()
	expect(f.t, got, autoscalingv1beta1.ConditionTypeReadyForProvisioning, metav1.ConditionTrue, autoscalingv1beta1.ReasonResolved)
	if r := ptr.Deref(got.Status.Replicas, -1); r != want {
		f.t.Errorf("status.replicas = %d, want %d", r, want)
	}
	if n := len(f.store.Pods()); n != int(want) {
		f.t.Errorf("%d virtual pods, want %d", n, want)
	}
}

// TestBufferFollowsItsSpec: a buffer whose replicas are lowered, or whose
// limits are raised, resolves to the new count, and the provisioner is
// given that many pods.
func TestBufferFollowsItsSpec(t *testing.T) {
	env.Create(t, podTemplate("follow-shape", "1"))
	ref := &autoscalingv1beta1.LocalObjectRef{Name: "follow-shape"}
	t.Run("replicas reduced", func(t *testing.T) {
		f := setup(t)
		cb := buffer("follow-replicas", autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: ref, Replicas: ptr.To[int32](3)})
		env.Create(t, cb)
		f.wantReplicas(f.reconcile(cb), 3)
		update(t, cb, func(cb *autoscalingv1beta1.CapacityBuffer) { cb.Spec.Replicas = ptr.To[int32](1) })
		f.wantReplicas(f.reconcile(cb), 1)
	})
	t.Run("limits raised", func(t *testing.T) {
		f := setup(t)
		cb := buffer("follow-limits", autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: ref,
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}})
		env.Create(t, cb)
		f.wantReplicas(f.reconcile(cb), 2)
		update(t, cb, func(cb *autoscalingv1beta1.CapacityBuffer) {
			cb.Spec.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5")}
		})
		f.wantReplicas(f.reconcile(cb), 5)
	})
}

// TestScalableRefBufferFollowsItsWorkload: a buffer created before its
// Deployment says ScalableRefNotFound and keeps no room; once the
// Deployment exists it resolves (20% of 5 replicas: 1 pod), and when the
// Deployment is scaled to 20 it follows (4 pods).
func TestScalableRefBufferFollowsItsWorkload(t *testing.T) {
	f := setup(t)
	cb := buffer("growing", autoscalingv1beta1.CapacityBufferSpec{
		ScalableRef: &autoscalingv1beta1.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: "growing-app"},
		Percentage:  ptr.To[int32](20)})
	env.Create(t, cb)
	got := f.reconcile(cb)
	expect(t, got, autoscalingv1beta1.ConditionTypeReadyForProvisioning, metav1.ConditionFalse, autoscalingv1beta1.ReasonScalableRefNotFound)
	if len(f.store.Pods()) != 0 {
		t.Fatalf("%d virtual pods before the Deployment exists, want none", len(f.store.Pods()))
	}

	labels := map[string]string{"app": "growing-app"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "growing-app"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](5), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplateSpec("growing-app", "500m")}}
	env.Create(t, dep)
	f.wantReplicas(f.reconcile(cb), 1)

	dep.Spec.Replicas = ptr.To[int32](20)
	if err := env.Client.Update(t.Context(), dep); err != nil {
		t.Fatal(err)
	}
	f.wantReplicas(f.reconcile(cb), 4)
}

// TestRapidlyCreatedAndDeletedBuffersKeepNoRoom: buffers created and
// deleted in quick succession, some deleted before they were ever
// reconciled, leave no virtual pod behind, and each deletion of a buffer
// that had room asks the provisioner for a pass (so the nodes kept for it
// can go).
func TestRapidlyCreatedAndDeletedBuffersKeepNoRoom(t *testing.T) {
	f := setup(t)
	env.Create(t, podTemplate("rapid-shape", "1"))
	ref := &autoscalingv1beta1.LocalObjectRef{Name: "rapid-shape"}
	for i := range 5 {
		cb := buffer(fmt.Sprintf("rapid-%d", i), autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: ref, Replicas: ptr.To[int32](2)})
		if err := env.Client.Create(t.Context(), cb); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKeyFromObject(cb)
		// Every other buffer is deleted before its first reconcile.
		if i%2 == 0 {
			f.reconcile(cb)
			if len(f.store.Pods()) != 2 {
				t.Fatalf("buffer %s: %d virtual pods, want 2", cb.Name, len(f.store.Pods()))
			}
		}
		before := f.triggers.count()
		if err := env.Client.Delete(t.Context(), cb); err != nil {
			t.Fatal(err)
		}
		if _, err := f.c.Reconcile(t.Context(), reconcile.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
		if n := len(f.store.Pods()); n != 0 {
			t.Fatalf("after deleting %s: %d virtual pods, want none", cb.Name, n)
		}
		if had, told := i%2 == 0, f.triggers.count() > before; had != told {
			t.Errorf("deleting %s (room kept: %v) asked for a pass: %v", cb.Name, had, told)
		}
	}
}
