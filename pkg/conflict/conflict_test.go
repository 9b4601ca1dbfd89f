package conflict_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/karp-autoscaler/karp/pkg/conflict"
)

func TestOnlyConflicts(t *testing.T) {
	gr := schema.GroupResource{Group: "karpenter.sh", Resource: "nodeclaims"}
	conflictErr := apierrors.NewConflict(gr, "a", errors.New("the object has been modified"))
	other := apierrors.NewNotFound(gr, "b")
	tests := map[string]struct {
		err  error
		want bool
	}{
		"nil":                                 {nil, false},
		"a conflict":                          {conflictErr, true},
		"a wrapped conflict":                  {fmt.Errorf("patching nodeclaim status: %w", conflictErr), true},
		"conflicts joined":                    {errors.Join(conflictErr, fmt.Errorf("x: %w", conflictErr)), true},
		"a conflict beside another error":     {errors.Join(conflictErr, other), false},
		"a wrapped join with another error":   {fmt.Errorf("lift: %w", errors.Join(conflictErr, other)), false},
		"another API error":                   {other, false},
		"a plain error":                       {errors.New("boom"), false},
		"an empty join wrapped (no conflict)": {fmt.Errorf("x: %w", errors.Join()), false},
	}
	for name, tc := range tests {
		if got := conflict.OnlyConflicts(tc.err); got != tc.want {
			t.Errorf("%s: OnlyConflicts(%v) = %v, want %v", name, tc.err, got, tc.want)
		}
	}
}

func TestRequeueRetriesConflictsAndReturnsOtherErrors(t *testing.T) {
	gr := schema.GroupResource{Group: "karpenter.sh", Resource: "nodepools"}
	var next error
	r := conflict.Requeue(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{}, next
	}))
	next = fmt.Errorf("patching nodepool status: %w", apierrors.NewConflict(gr, "default", errors.New("modified")))
	var delays []time.Duration
	for range 3 {
		res, err := r.Reconcile(t.Context(), reconcile.Request{})
		if err != nil || res.RequeueAfter <= 0 {
			t.Fatalf("conflict: got (%+v, %v), want a requeue after a delay and no error", res, err)
		}
		delays = append(delays, res.RequeueAfter)
	}
	if !(delays[0] < delays[1] && delays[1] < delays[2]) {
		t.Errorf("delays %v while the request keeps conflicting, want them growing", delays)
	}
	next = apierrors.NewServiceUnavailable("try later")
	if _, err := r.Reconcile(t.Context(), reconcile.Request{}); !apierrors.IsServiceUnavailable(err) {
		t.Errorf("another error: got %v, want it returned", err)
	}
	next = apierrors.NewConflict(gr, "default", errors.New("modified"))
	if res, _ := r.Reconcile(t.Context(), reconcile.Request{}); res.RequeueAfter != delays[0] {
		t.Errorf("first conflict after another outcome retried after %v, want the first delay %v again", res.RequeueAfter, delays[0])
	}
}
