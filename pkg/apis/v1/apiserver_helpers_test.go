package v1_test

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// invalidCase is one object the API server must reject. The object is built
// typed, turned into unstructured form and then mutated, so a case can send
// what Go types cannot hold (a bad duration string, a wrong JSON type).
type invalidCase struct {
	obj    client.Object
	mutate func(u map[string]interface{})
	// want are substrings the rejection must contain: the offending field
	// path and the rule's message.
	want []string
}

// set returns a mutation writing value at the given path.
func set(value interface{}, path ...string) func(map[string]interface{}) {
	return func(u map[string]interface{}) {
		if err := unstructured.SetNestedField(u, value, path...); err != nil {
			panic(err)
		}
	}
}

// remove returns a mutation deleting the field at path.
func remove(path ...string) func(map[string]interface{}) {
	return func(u map[string]interface{}) { unstructured.RemoveNestedField(u, path...) }
}

func toUnstructured(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatalf("converting %T: %v", obj, err)
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u
}

// expectRejected creates each case and checks the API server refuses it as
// Invalid with every wanted substring in the message.
func expectRejected(t *testing.T, cases map[string]invalidCase) {
	t.Helper()
	ctx := t.Context()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := toUnstructured(t, tc.obj)
			if tc.mutate != nil {
				tc.mutate(u.Object)
			}
			err := kubeClient.Create(ctx, u)
			if err == nil {
				_ = kubeClient.Delete(ctx, u)
				t.Fatalf("created %s, want it rejected with %q", u.GetName(), tc.want)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("error is not Invalid: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err.Error(), w)
				}
			}
			t.Logf("rejected: %v", err)
		})
	}
}

// expectAccepted creates each object (typed or unstructured), then deletes it.
func expectAccepted(t *testing.T, cases map[string]client.Object) {
	t.Helper()
	ctx := t.Context()
	for name, obj := range cases {
		t.Run(name, func(t *testing.T) {
			if err := kubeClient.Create(ctx, obj); err != nil {
				t.Fatalf("creating %s: %v", obj.GetName(), err)
			}
			if err := kubeClient.Delete(ctx, obj); err != nil {
				t.Fatalf("deleting %s: %v", obj.GetName(), err)
			}
		})
	}
}
