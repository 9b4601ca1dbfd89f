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
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
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

	s := consSampleDisrupting(t, f.Config, name)
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
	peak, events := s.stop()
	if s.err != nil {
		t.Fatal(s.err)
	}
	t.Logf("%d NodeClaim events, at most %d node(s) disrupted at once", events, peak)
	if peak > 1 {
		t.Errorf("%d nodes were disrupted at once; the budget allows 1", peak)
	}
	if peak == 0 {
		t.Error("no node was ever seen being disrupted")
	}
}

// consSampler records the most NodeClaims of a pool seen being disrupted at
// once (deleting, or held by a disruption command). It watches NodeClaims
// rather than polling, so a node that goes faster than any poll interval
// (an empty kwok node on an idle machine) is still seen: the NodeClaim's
// finalizer guarantees an update carrying its deletionTimestamp before it
// is removed.
type consSampler struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	peak   int
	events int
	err    error
}

func consSampleDisrupting(t *testing.T, cfg *rest.Config, pool string) *consSampler {
	t.Helper()
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: environment.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := wc.Watch(ctx, &karpv1.NodeClaimList{}, client.MatchingLabels{karpv1.NodePoolLabelKey: pool})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &consSampler{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer w.Stop()
		disrupting := map[string]bool{}
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					s.mu.Lock()
					s.err = fmt.Errorf("the NodeClaim watch closed early")
					s.mu.Unlock()
					return
				}
				nc, isClaim := ev.Object.(*karpv1.NodeClaim)
				if !isClaim {
					continue
				}
				switch {
				case ev.Type == watch.Deleted:
					delete(disrupting, nc.Name)
				case nc.DeletionTimestamp != nil || nc.StatusConditions().IsTrue(karpv1.ConditionTypeDisruptionReason):
					disrupting[nc.Name] = true
				default:
					delete(disrupting, nc.Name)
				}
				s.mu.Lock()
				s.events++
				s.peak = max(s.peak, len(disrupting))
				s.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { s.stop() })
	return s
}

// stop ends the watch and returns the peak and the number of events seen.
func (s *consSampler) stop() (peak, events int) {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak, s.events
}
