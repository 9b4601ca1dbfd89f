package capacitybuffer_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1beta1"
)

// TestCapacityBufferValidation runs every rule of the CRD's schema (Cluster
// Autoscaler's, as upstream Karpenter serves it) against the API server.
func TestCapacityBufferValidation(t *testing.T) {
	templateRef := &autoscalingv1beta1.LocalObjectRef{Name: "shape"}
	deployment := &autoscalingv1beta1.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: "web"}
	cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
	tests := map[string]struct {
		spec autoscalingv1beta1.CapacityBufferSpec
		// wantErr is a substring of the API server's message; "" accepts.
		wantErr string
	}{
		"podTemplateRef with replicas":        {spec: autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: templateRef, Replicas: ptr.To[int32](2)}},
		"podTemplateRef with limits":          {spec: autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: templateRef, Limits: cpu}},
		"scalableRef alone":                   {spec: autoscalingv1beta1.CapacityBufferSpec{ScalableRef: deployment}},
		"scalableRef with percentage":         {spec: autoscalingv1beta1.CapacityBufferSpec{ScalableRef: deployment, Percentage: ptr.To[int32](20)}},
		"zero replicas":                       {spec: autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: templateRef, Replicas: ptr.To[int32](0)}},
		"neither reference (controller's)":    {spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](1)}},
		"podTemplateRef without a size":       {spec: autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: templateRef}, wantErr: "If podTemplateRef is set, replicas or limits must also be set"},
		"podTemplateRef with percentage only": {spec: autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: templateRef, Percentage: ptr.To[int32](5)}, wantErr: "If podTemplateRef is set, replicas or limits must also be set"},
		"both references": {spec: autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: templateRef, ScalableRef: deployment, Replicas: ptr.To[int32](1)},
			wantErr: "You must define either PodTemplateRef or ScalableRef, but not both"},
		"negative replicas":         {spec: autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: templateRef, Replicas: ptr.To[int32](-1)}, wantErr: "spec.replicas"},
		"negative percentage":       {spec: autoscalingv1beta1.CapacityBufferSpec{ScalableRef: deployment, Percentage: ptr.To[int32](-1)}, wantErr: "spec.percentage"},
		"empty podTemplateRef name": {spec: autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{}, Replicas: ptr.To[int32](1)}, wantErr: "spec.podTemplateRef.name"},
		"empty scalableRef kind":    {spec: autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{Name: "web"}}, wantErr: "spec.scalableRef.kind"},
		"empty scalableRef name":    {spec: autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{Kind: "Deployment"}}, wantErr: "spec.scalableRef.name"},
	}
	i := 0
	for name, tc := range tests {
		i++
		cb := &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("validation-%d", i)}, Spec: tc.spec}
		t.Run(name, func(t *testing.T) {
			err := env.Client.Create(t.Context(), cb)
			if err == nil {
				t.Cleanup(func() { _ = env.Client.Delete(t.Context(), cb) })
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("accepted, want an error naming %q", tc.wantErr)
			case tc.wantErr != "" && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want Invalid naming %q", err, tc.wantErr)
			}
		})
	}
}

// TestCapacityBufferDefaultsStrategy: the API server fills in the active
// strategy, and a status written without the spec round-trips.
func TestCapacityBufferDefaultsStrategy(t *testing.T) {
	cb := &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "defaulted"},
		Spec: autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{Kind: "Deployment", Name: "web"}}}
	env.Create(t, cb)
	got := &autoscalingv1beta1.CapacityBuffer{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(cb), got); err != nil {
		t.Fatal(err)
	}
	if s := ptr.Deref(got.Spec.ProvisioningStrategy, ""); s != autoscalingv1beta1.ActiveProvisioningStrategy {
		t.Errorf("provisioningStrategy = %q, want %q", s, autoscalingv1beta1.ActiveProvisioningStrategy)
	}
}
