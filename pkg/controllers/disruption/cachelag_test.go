package disruption_test

import (
	"context"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestReplacementTheCacheHasNotSeenIsNotTakenForDeleted: a replacement
// NodeClaim created a moment ago may be missing from the controller's
// cache. The command must not be rolled back as if the replacement had
// been deleted (which would launch a second replacement for the same
// pods): its absence is confirmed with the API server first.
func TestReplacementTheCacheHasNotSeenIsNotTakenForDeleted(t *testing.T) {
	h := newHarness(t)
	// The controller's reads of NodeClaims it created find nothing, as a
	// cache that has not caught up would; its API reader sees them.
	var mu sync.Mutex
	created := map[string]bool{}
	lagging := h.intercepted(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := c.Create(ctx, obj, opts...); err != nil {
				return err
			}
			if _, ok := obj.(*karpv1.NodeClaim); ok {
				mu.Lock()
				created[obj.GetName()] = true
				mu.Unlock()
			}
			return nil
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			mu.Lock()
			lag := created[key.Name]
			mu.Unlock()
			if _, ok := obj.(*karpv1.NodeClaim); ok && lag {
				return apierrors.NewNotFound(karpv1.Resource("nodeclaims"), key.Name)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	h.newControllerOver(lagging)
	h.controller = h.controller.WithAPIReader(h.client)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	h.runningNode("big", nodeOpts{it: largeType}, pod("p1", "1"))
	h.decide()
	if got := len(h.replacements("big")); got != 1 {
		t.Fatalf("%d replacements after the decision, want 1", got)
	}
	for range 3 {
		h.pass()
	}
	if got := len(h.replacements("big")); got != 1 {
		t.Errorf("%d replacements after more passes, want still 1: the command was rolled back and relaunched", got)
	}
	if !h.tainted("big") {
		t.Error("candidate untainted: the command was rolled back although its replacement exists")
	}
}
