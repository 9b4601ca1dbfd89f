package aws_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test/awssim"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
	"github.com/karp-autoscaler/karp/test/e2e/framework/awsenv"
)

// TestSpotRebalanceReplacesBeforeDraining runs two pods on one spot node of
// a NodePool opted in with karp.sh/spot-rebalance: replace and sends EC2's
// rebalance recommendation for its instance through the SQS queue. Watching
// the NodeClaims and pods as the API server reports them, it checks that
// the replacement NodeClaim is created and Initialized before the old
// NodeClaim is deleted and before any of the old node's pods is evicted,
// that the pods end up Available on the replacement, and that the
// replacement's spot offering (instance type, zone) is not the recommended
// one. The recommendation is sent again while the replacement launches and
// once more after the old node is gone: no other NodeClaim is ever created.
func TestSpotRebalanceReplacesBeforeDraining(t *testing.T) {
	const name = "e2e-rebalance"
	e := awsenv.Start(t)
	e.SetUp(t, e.NodeClass(name), awsenv.NodePool(name).Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot))
	np := &karpv1.NodePool{}
	np.Name = name
	framework.Mutate(t, e.Client, np, func() {
		np.Annotations = map[string]string{karpv1.SpotRebalanceAnnotationKey: karpv1.SpotRebalanceReplace}
	})
	framework.Create(t, e.Client, framework.Deployment(name, name, name, 2, "500m"))
	pods := e.WaitAvailable(t, name, 2)
	if pods[0].Spec.NodeName != pods[1].Spec.NodeName {
		t.Fatalf("pods on %s and %s, want one node", pods[0].Spec.NodeName, pods[1].Spec.NodeName)
	}
	victim := e.Node(t, pods[0].Spec.NodeName)
	old := framework.NodeClaimOfNode(t, e.Client, victim.Name)
	inst, ok := e.InstanceOf(victim.Spec.ProviderID)
	if !ok || inst.InstanceLifecycle != ec2types.InstanceLifecycleTypeSpot {
		t.Fatalf("node %s: instance %v is not a simulated spot instance", victim.Name, inst.InstanceId)
	}
	recommended := pool{string(inst.InstanceType), aws.ToString(inst.Placement.AvailabilityZone)}
	instanceID := aws.ToString(inst.InstanceId)
	order := watchRebalance(t, e, name, old.Name, victim.Name)

	// 1. The recommendation; again once the NodeClaim is marked, while its
	// replacement launches.
	if err := e.Sim.SendInterruption(t.Context(), awssim.RebalanceRecommendation, instanceID); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, awsenv.ScaleTimeout, func(ctx context.Context) (bool, string) {
		nc := &karpv1.NodeClaim{}
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(old), nc); err != nil {
			return false, err.Error()
		}
		return nc.StatusConditions().IsTrue(karpv1.ConditionTypeRebalanceRecommended), fmt.Sprintf("conditions %v", nc.Status.Conditions)
	})
	if err := e.Sim.SendInterruption(t.Context(), awssim.RebalanceRecommendation, instanceID); err != nil {
		t.Fatal(err)
	}

	// 2. The pods move to the replacement and the old node goes.
	var replacement string
	framework.Eventually(t, driftTimeout, func(ctx context.Context) (bool, string) {
		claims := framework.PoolNodeClaims(ctx, e.Client, name)
		if len(claims) != 1 || claims[0].Name == old.Name {
			return false, fmt.Sprintf("NodeClaims %v, want only the replacement", claimNames(claims))
		}
		replacement = claims[0].Name
		onReplacement := 0
		for _, p := range framework.AvailablePods(ctx, e.Client, name, nil) {
			if p.Spec.NodeName == claims[0].Status.NodeName {
				onReplacement++
			}
		}
		gone := nodeGone(ctx, e.Client, victim.Name)
		return onReplacement == 2 && gone, fmt.Sprintf("%d of 2 pods available on the replacement %s, old node gone %t", onReplacement, replacement, gone)
	})

	// 3. In the order the API server reported: the replacement was created
	// and initialized before the old NodeClaim was deleted and before any
	// pod of the old node was evicted.
	seen := order.snapshot()
	if seen.err != nil {
		t.Fatal(seen.err)
	}
	created, initialized := seen.created[replacement], seen.initialized[replacement]
	t.Logf("replacement %s created at #%d, Initialized at #%d; old NodeClaim deleting at #%d, first pod evicted at #%d",
		replacement, created, initialized, seen.oldDeleting, seen.evicted)
	switch {
	case created == 0 || initialized == 0:
		t.Errorf("replacement %s never seen created (%d) or Initialized (%d)", replacement, created, initialized)
	case seen.oldDeleting == 0 || seen.evicted == 0:
		t.Errorf("old NodeClaim deletion (%d) or pod eviction (%d) never seen", seen.oldDeleting, seen.evicted)
	case initialized > seen.oldDeleting || initialized > seen.evicted:
		t.Errorf("the old node was drained before its replacement was ready: replacement created at #%d, Initialized at #%d; "+
			"old NodeClaim deleting at #%d, first pod evicted at #%d", created, initialized, seen.oldDeleting, seen.evicted)
	}

	// 4. Not on the recommended offering.
	claim := &karpv1.NodeClaim{}
	if err := e.Client.Get(t.Context(), client.ObjectKey{Name: replacement}, claim); err != nil {
		t.Fatal(err)
	}
	now, ok := e.InstanceOf(claim.Status.ProviderID)
	if !ok {
		t.Fatalf("no instance for the replacement %s", claim.Name)
	}
	got := pool{string(now.InstanceType), aws.ToString(now.Placement.AvailabilityZone)}
	t.Logf("recommended spot offering %v, replacement on %v (%s)", recommended, got, now.InstanceLifecycle)
	if got == recommended && now.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
		t.Errorf("the replacement runs on the recommended spot offering %v", recommended)
	}

	// 5. The recommendation for the old instance once more: it has no
	// NodeClaim now, and over the next disruption passes nothing is
	// launched.
	if err := e.Sim.SendInterruption(t.Context(), awssim.RebalanceRecommendation, instanceID); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, time.Minute, func(context.Context) (bool, string) {
		counts := e.Sim.SQS.Messages(e.Sim.QueueName())
		return counts.Visible == 0 && counts.InFlight == 0 && counts.Deleted >= 3, fmt.Sprintf("interruption queue: %+v", counts)
	})
	e.Karp.HoldsFor(t, framework.Passes{"disruption": 10}, 2*time.Minute, func(ctx context.Context) string {
		if names := order.snapshot().names(); len(names) != 2 {
			return fmt.Sprintf("NodeClaims ever seen: %v, want the original and one replacement", names)
		}
		return ""
	})
}

// rebalanceOrder is what watchRebalance saw, each fact numbered in the
// order it was observed (0: not seen).
type rebalanceOrder struct {
	// created and initialized number the first sight of each NodeClaim
	// other than the old one, and of it Initialized.
	created, initialized map[string]int
	// oldDeleting is the old NodeClaim's deletion; evicted the first pod
	// of the old node seen terminating.
	oldDeleting, evicted int
	// seen are all the pool's NodeClaims ever seen.
	seen map[string]bool
	err  error
}

func (o rebalanceOrder) names() []string {
	out := make([]string, 0, len(o.seen))
	for n := range o.seen {
		out = append(out, n)
	}
	return out
}

// rebalanceWatcher numbers facts from a NodeClaim watch over the pool and
// a pod watch over the namespace. Within a watch the numbers follow the API
// server's order; across the two they follow arrival, which is enough here
// (an eviction follows the old NodeClaim's deletion by a drain).
type rebalanceWatcher struct {
	mu    sync.Mutex
	seq   int
	order rebalanceOrder
}

func (w *rebalanceWatcher) snapshot() rebalanceOrder {
	w.mu.Lock()
	defer w.mu.Unlock()
	o := w.order
	o.created, o.initialized, o.seen = copyInts(o.created), copyInts(o.initialized), map[string]bool{}
	for k := range w.order.seen {
		o.seen[k] = true
	}
	return o
}

func copyInts(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// watchRebalance starts the watches; they stop when the test ends.
func watchRebalance(t *testing.T, e *awsenv.Env, pool, oldClaim, oldNode string) *rebalanceWatcher {
	t.Helper()
	wc, err := client.NewWithWatch(e.Framework.Config, client.Options{Scheme: environment.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	claims, err := wc.Watch(ctx, &karpv1.NodeClaimList{}, client.MatchingLabels{karpv1.NodePoolLabelKey: pool})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	pods, err := wc.Watch(ctx, &corev1.PodList{}, client.InNamespace(pool))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	w := &rebalanceWatcher{order: rebalanceOrder{created: map[string]int{}, initialized: map[string]int{}, seen: map[string]bool{}}}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		w.run(ctx, claims, func(obj any) {
			nc, ok := obj.(*karpv1.NodeClaim)
			if !ok {
				return
			}
			w.order.seen[nc.Name] = true
			switch {
			case nc.Name == oldClaim:
				if nc.DeletionTimestamp != nil && w.order.oldDeleting == 0 {
					w.order.oldDeleting = w.next()
				}
			case w.order.created[nc.Name] == 0:
				w.order.created[nc.Name] = w.next()
			}
			if nc.Name != oldClaim && nc.StatusConditions().IsTrue(karpv1.ConditionTypeInitialized) && w.order.initialized[nc.Name] == 0 {
				w.order.initialized[nc.Name] = w.next()
			}
		})
	}()
	go func() {
		defer wg.Done()
		w.run(ctx, pods, func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName == oldNode && p.DeletionTimestamp != nil && w.order.evicted == 0 {
				w.order.evicted = w.next()
			}
		})
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return w
}

// run feeds each event's object to record, under the lock, until ctx ends.
func (w *rebalanceWatcher) run(ctx context.Context, wi watch.Interface, record func(any)) {
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-wi.ResultChan():
			if !ok {
				w.mu.Lock()
				w.order.err = fmt.Errorf("a watch closed early")
				w.mu.Unlock()
				return
			}
			if ev.Type == watch.Error {
				continue
			}
			w.mu.Lock()
			record(ev.Object)
			w.mu.Unlock()
		}
	}
}

func (w *rebalanceWatcher) next() int {
	w.seq++
	return w.seq
}

func claimNames(claims []karpv1.NodeClaim) string {
	out := make([]string, 0, len(claims))
	for _, nc := range claims {
		out = append(out, nc.Name)
	}
	return strings.Join(out, ",")
}
