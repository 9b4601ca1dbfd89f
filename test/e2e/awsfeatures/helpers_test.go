package awsfeatures_test

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// gone reports whether the object is deleted from the API server.
func gone(ctx context.Context, cl client.Client, obj client.Object) bool {
	err := cl.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
	return apierrors.IsNotFound(err)
}

// hasEvent reports whether an event of reason regards the object of kind
// and name (in any namespace: a cluster-scoped object's are in default).
func hasEvent(t *testing.T, cl client.Client, kind, name, reason string) bool {
	t.Helper()
	for _, got := range framework.EventReasons(t, cl, "", kind, name) {
		if got == reason {
			return true
		}
	}
	return false
}
