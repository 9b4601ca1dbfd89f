package v1alpha1_test

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func TestKWOKNodeClassRegistrationDelay(t *testing.T) {
	ctx := t.Context()
	tests := map[string]struct {
		delay   string
		wantErr bool
	}{
		"seconds":            {delay: "5s"},
		"fractional":         {delay: "1.5s"},
		"compound":           {delay: "1m30s"},
		"milliseconds":       {delay: "250ms"},
		"days are rejected":  {delay: "1d", wantErr: true},
		"words are rejected": {delay: "soon", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(test.MakeKWOKNodeClass("delay").Obj())
			if err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{Object: m}
			unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
			unstructured.RemoveNestedField(u.Object, "status")
			if err := unstructured.SetNestedField(u.Object, tc.delay, "spec", "nodeRegistrationDelay"); err != nil {
				t.Fatal(err)
			}
			err = kubeClient.Create(ctx, u)
			if tc.wantErr {
				if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.nodeRegistrationDelay") {
					t.Fatalf("create error = %v, want Invalid at spec.nodeRegistrationDelay", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			if err := kubeClient.Delete(ctx, u); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The kwok provider reports readiness through the status subresource.
func TestKWOKNodeClassStatusReady(t *testing.T) {
	ctx := t.Context()
	nodeClass := test.MakeKWOKNodeClass("status").NodeRegistrationDelay(2 * time.Second).Obj()
	if err := kubeClient.Create(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kubeClient.Delete(context.WithoutCancel(t.Context()), nodeClass) })

	ready := test.MakeKWOKNodeClass("status").Ready(true, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)).Obj()
	nodeClass.Status = ready.Status
	if err := kubeClient.Status().Update(ctx, nodeClass); err != nil {
		t.Fatalf("updating status: %v", err)
	}
	got := &kwokv1alpha1.KWOKNodeClass{}
	if err := kubeClient.Get(ctx, client.ObjectKeyFromObject(nodeClass), got); err != nil {
		t.Fatal(err)
	}
	if !got.StatusConditions().IsTrue(kwokv1alpha1.ConditionTypeReady) {
		t.Errorf("conditions after status update = %+v, want Ready True", got.Status.Conditions)
	}
	if got.Spec.NodeRegistrationDelay == nil || got.Spec.NodeRegistrationDelay.Duration != 2*time.Second {
		t.Errorf("nodeRegistrationDelay = %v, want 2s", got.Spec.NodeRegistrationDelay)
	}
}
