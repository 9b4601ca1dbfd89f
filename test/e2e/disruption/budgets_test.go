package disruption

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// TestZeroBudgetInAnActiveScheduleBlocksDisruption empties three nodes of a
// pool whose only budget is nodes "0" inside an always-active schedule:
// the nodes stay and each NodeClaim says the budget is why. Then the zero
// budget's window moves away (a minute on January 1st) beside a budget of
// one node: the nodes go, never more than one at a time.
func TestZeroBudgetInAnActiveScheduleBlocksDisruption(t *testing.T) {
	const name = "e2e-budgets"
	always, yearly := "* * * * *", "0 0 1 1 *"
	pool := test.MakeNodePool(name).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmpty).
		ConsolidateAfter(karpv1.MustParseNillableDuration("5s")).
		Budgets(karpv1.Budget{Nodes: "0", Schedule: &always, Duration: &metav1.Duration{Duration: time.Hour}}).Obj()
	f := consSetup(t, name, pool)
	cl := f.Client
	consStartKarp(t, f)
	t.Cleanup(func() { consCleanUp(cl, name) })

	deploy := consSpread(consDeployment(name, name, name, 3, "1"))
	consCreate(t, cl, deploy)
	framework.Eventually(t, 4*time.Minute, func(ctx context.Context) (bool, string) {
		n := consAvailable(ctx, cl, name, map[string]string{"app": name})
		return n == 3, fmt.Sprintf("%d of 3 pods available", n)
	})
	if err := cl.Delete(t.Context(), deploy); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 2*time.Minute, func(ctx context.Context) (bool, string) {
		claims := consNodeClaims(ctx, cl, name)
		blocked := 0
		for _, nc := range claims {
			if c := nc.StatusConditions().Get(disruption.ConditionTypeDisruptionBlocked); c != nil && c.Reason == disruption.BlockedBudget {
				blocked++
			}
			if nc.DeletionTimestamp != nil {
				return false, "nodeclaim " + nc.Name + " is being deleted although the budget is 0"
			}
		}
		return len(claims) == 3 && blocked == 3, fmt.Sprintf("%d nodeclaims, %d blocked by the budget", len(claims), blocked)
	})
	for _, nc := range consNodeClaims(t.Context(), cl, name) {
		t.Logf("nodeclaim %s: %s", nc.Name, nc.StatusConditions().Get(disruption.ConditionTypeDisruptionBlocked).Message)
	}

	s := consSampleDisrupting(t, cl, name)
	current := &karpv1.NodePool{}
	if err := cl.Get(t.Context(), types.NamespacedName{Name: name}, current); err != nil {
		t.Fatal(err)
	}
	current.Spec.Disruption.Budgets = []karpv1.Budget{
		{Nodes: "0", Schedule: &yearly, Duration: &metav1.Duration{Duration: time.Minute}},
		{Nodes: "1"},
	}
	if err := cl.Update(t.Context(), current); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 4*time.Minute, func(ctx context.Context) (bool, string) {
		n := len(consNodeClaims(ctx, cl, name))
		return n == 0, fmt.Sprintf("%d nodeclaims left", n)
	})
	peak, samples := s.stop()
	t.Logf("%d samples, at most %d node(s) disrupted at once", samples, peak)
	if peak > 1 {
		t.Errorf("%d nodes were disrupted at once; the budget allows 1", peak)
	}
	if peak == 0 {
		t.Error("no node was ever seen being disrupted")
	}
}

// consSampler records, every 200 ms, the most nodes of a pool seen being
// disrupted at once (NodeClaim deleting or Node tainted disrupted).
type consSampler struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	peak    int
	samples int
}

func consSampleDisrupting(t *testing.T, cl client.Client, pool string) *consSampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &consSampler{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			n := 0
			for _, nc := range consNodeClaims(ctx, cl, pool) {
				node := &corev1.Node{}
				tainted := nc.Status.NodeName != "" && cl.Get(ctx, types.NamespacedName{Name: nc.Status.NodeName}, node) == nil && consTainted(node)
				if nc.DeletionTimestamp != nil || tainted {
					n++
				}
			}
			s.mu.Lock()
			s.samples++
			s.peak = max(s.peak, n)
			s.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { s.stop() })
	return s
}

func (s *consSampler) stop() (peak, samples int) {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak, s.samples
}
