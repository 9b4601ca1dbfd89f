package disruption_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/watch"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestCandidateIsTaintedBeforeItsReplacementLaunches: when the replacement
// NodeClaim is created, the candidate's Node already carries
// karpenter.sh/disrupted:NoSchedule in the API, so no pod the
// kube-scheduler places meanwhile lands on a node about to go.
func TestCandidateIsTaintedBeforeItsReplacementLaunches(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	var taintedAtCreate []bool
	observed := h.intercepted(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*karpv1.NodeClaim); ok {
				mu.Lock()
				taintedAtCreate = append(taintedAtCreate, h.tainted("big"))
				mu.Unlock()
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	h.newControllerOver(observed)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	h.runningNode("big", nodeOpts{it: largeType}, pod("p1", "1"))
	h.decide()
	if len(h.replacements("big")) != 1 {
		t.Fatalf("node not replaced (DisruptionBlocked = %+v)", h.blocked("big"))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(taintedAtCreate) != 1 || !taintedAtCreate[0] {
		t.Errorf("candidate tainted when its replacement was created: %v, want [true]", taintedAtCreate)
	}
}

// noWatch lets interceptor.NewClient wrap a client.Client.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not supported")
}
