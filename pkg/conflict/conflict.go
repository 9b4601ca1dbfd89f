// Package conflict lets a controller retry an optimistic-lock conflict
// quietly. Several controllers write one NodeClaim's status (lifecycle,
// consistency, disruption) and one NodePool's; each writes with the
// resourceVersion it read, so when two act at once one loses with a
// conflict and must read again. That is how writers of one object take
// turns, not a fault: logged as controller-runtime's "Reconciler error" at
// ERROR, a healthy scale-out of a few hundred nodes printed dozens of them.
package conflict

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Requeue wraps r: a reconcile that fails only because an object changed
// under one of its writes is retried after a short delay, growing from
// 10ms to 5s while the same request keeps conflicting, and logged at debug
// level instead of returned as an error. Any other outcome is returned as
// it is and resets the request's delay.
func Requeue(r reconcile.Reconciler) reconcile.Reconciler {
	backoff := workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](10*time.Millisecond, 5*time.Second)
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		res, err := r.Reconcile(ctx, req)
		if err != nil && OnlyConflicts(err) {
			delay := backoff.When(req)
			log.FromContext(ctx).V(1).Info("retrying after a write conflict", "error", err.Error(), "after", delay.String())
			return reconcile.Result{RequeueAfter: delay}, nil
		}
		backoff.Forget(req)
		return res, err
	})
}

// OnlyConflicts reports whether err is a conflict, or errors joined or
// wrapped that are all conflicts: a conflict beside another failure is
// still that failure.
func OnlyConflicts(err error) bool {
	// Each layer is looked at in turn: errors.As would find a conflict
	// inside a join beside another error.
	switch e := err.(type) { //nolint:errorlint // see above
	case nil:
		return false
	case apierrors.APIStatus:
		return e.Status().Reason == metav1.StatusReasonConflict
	case interface{ Unwrap() []error }:
		errs := e.Unwrap()
		for _, inner := range errs {
			if !OnlyConflicts(inner) {
				return false
			}
		}
		return len(errs) > 0
	}
	return OnlyConflicts(errors.Unwrap(err))
}
