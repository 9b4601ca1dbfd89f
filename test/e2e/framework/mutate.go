package framework

import (
	"testing"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Mutate reads obj (by its name and namespace), applies mutate to it and
// updates it, reading and applying again on a conflict: controllers write
// the status of NodePools and Deployments all the time, so a plain
// get-then-update fails now and then. obj holds the stored result.
func Mutate(t testing.TB, cl client.Client, obj client.Object, mutate func()) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := cl.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate()
		return cl.Update(t.Context(), obj)
	})
	if err != nil {
		t.Fatalf("updating %T %s: %v", obj, obj.GetName(), err)
	}
}
