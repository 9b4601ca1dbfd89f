// Package singleton starts controllers that run a loop rather than watch
// objects (the provisioner, disruption, garbage collection, the AWS
// provider's refreshes): their source queues one request when the
// controller starts, and each Reconcile schedules the next pass by
// returning RequeueAfter (or an error, which backs off).
package singleton

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Source queues the one request named name (how the controller's logs
// name each pass; it may be empty) when the controller starts.
func Source(name string) source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
		return nil
	})
}
