package disruption_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestTaintedCandidateIsNotReprovisionedBeforeItsReplacementExists: the
// candidate is tainted karpenter.sh/disrupted before its replacement is
// created. While the replacement is being created (here: once the
// cluster state has seen the taint), the candidate must not count as
// marked for deletion with pods nobody holds, or the provisioner
// launches capacity for them next to the replacement (a chaos run saw a
// 1→2 replacement become 1→4 this way, under a slow API server).
func TestTaintedCandidateIsNotReprovisionedBeforeItsReplacementExists(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	type seen struct{ taintSeen, marked bool }
	var atCreate []seen
	observed := h.intercepted(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*karpv1.NodeClaim); ok {
				s := seen{}
				deadline := time.Now().Add(10 * time.Second)
				for time.Now().Before(deadline) && !s.taintSeen {
					for _, sn := range h.cluster.Nodes() {
						if sn.Node != nil && sn.Node.Name == "big" && hasDisruptedTaint(sn) {
							s = seen{taintSeen: true, marked: sn.MarkedForDeletion}
						}
					}
					time.Sleep(20 * time.Millisecond)
				}
				mu.Lock()
				atCreate = append(atCreate, s)
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
	if len(atCreate) != 1 || !atCreate[0].taintSeen {
		t.Fatalf("state at the replacement's creation: %+v; want the candidate's taint seen", atCreate)
	}
	if atCreate[0].marked {
		t.Error("the candidate counted as marked for deletion before its replacement existed: the provisioner would launch for its pods")
	}
	for _, sn := range h.cluster.Nodes() {
		if sn.Node != nil && sn.Node.Name == "big" && !sn.MarkedForDeletion {
			t.Error("the candidate is not marked for deletion once its replacement exists")
		}
	}
}

func hasDisruptedTaint(sn *state.StateNode) bool {
	for _, taint := range sn.Node.Spec.Taints {
		if taint.Key == karpv1.DisruptedTaintKey {
			return true
		}
	}
	return false
}
