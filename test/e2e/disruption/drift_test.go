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
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// TestTemplateLabelChangeDriftsEveryNodeWithinTheBudget runs three pods on
// three nodes, changes the NodePool's template labels, and samples the
// cluster until every node was replaced by one with the new label: at no
// sample are more original nodes being disrupted than the budget's one.
func TestTemplateLabelChangeDriftsEveryNodeWithinTheBudget(t *testing.T) {
	const name = "e2e-drift"
	pool := test.MakeNodePool(name).
		Labels(map[string]string{"rollout": "v1"}).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmpty).
		ConsolidateAfter(karpv1.MustParseNillableDuration(karpv1.Never)).
		Budgets(karpv1.Budget{Nodes: "1"}).
		Obj()
	f := sigSetup(t, name, pool, sigFastDisruption...)
	cl := f.Client
	deploy := sigDeployment(name, 3, "500m")
	sigSpreadOverHosts(&deploy.Spec.Template.Spec, name)
	termCreate(t, cl, deploy)
	original := sigWaitRunning(t, cl, name, 3)
	if len(original) != 3 {
		t.Fatalf("pods run under %d NodeClaims, want 3", len(original))
	}

	s := sigSampleDisrupting(t, cl, name, original)
	current := &karpv1.NodePool{}
	if err := cl.Get(t.Context(), types.NamespacedName{Name: name}, current); err != nil {
		t.Fatal(err)
	}
	current.Spec.Template.ObjectMeta.Labels["rollout"] = "v2"
	if err := cl.Update(t.Context(), current); err != nil {
		t.Fatalf("changing the template labels: %v", err)
	}

	framework.Eventually(t, 6*time.Minute, func(ctx context.Context) (bool, string) {
		claims := sigNodeClaims(ctx, cl, name)
		left, relabelled := 0, 0
		for n, nc := range claims {
			if original[n] {
				left++
			} else if nc.Labels["rollout"] == "v2" {
				relabelled++
			}
		}
		running := len(sigRunningPods(ctx, cl, name))
		return left == 0 && relabelled >= 3 && running == 3,
			fmt.Sprintf("%d original NodeClaims left, %d with the new label, %d of 3 pods running", left, relabelled, running)
	})
	peak, seen := s.stop()
	if seen == 0 {
		t.Error("no original node was ever seen being disrupted")
	}
	if peak > 1 {
		t.Errorf("%d original nodes were disrupted at once; the budget allows 1", peak)
	}
}

// sigSpreadOverHosts puts each of the app's pods on its own node.
func sigSpreadOverHosts(spec *corev1.PodSpec, app string) {
	spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey:   corev1.LabelHostname,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		}},
	}}
}

// sigDisruptionSampler counts, every 200 ms, the watched NodeClaims being
// disrupted: deleting, or their Node tainted karpenter.sh/disrupted.
type sigDisruptionSampler struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	peak   int
	seen   int
}

func sigSampleDisrupting(t *testing.T, cl client.Client, pool string, watched map[string]bool) *sigDisruptionSampler {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &sigDisruptionSampler{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			n := sigCountDisrupting(ctx, cl, pool, watched)
			s.mu.Lock()
			s.peak = max(s.peak, n)
			if n > 0 {
				s.seen++
			}
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

// stop ends sampling and returns the most nodes seen disrupted at once and
// in how many samples any was.
func (s *sigDisruptionSampler) stop() (peak, seen int) {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak, s.seen
}

func sigCountDisrupting(ctx context.Context, cl client.Client, pool string, watched map[string]bool) int {
	n := 0
	for name, nc := range sigNodeClaims(ctx, cl, pool) {
		if !watched[name] {
			continue
		}
		if nc.DeletionTimestamp != nil || sigTainted(ctx, cl, nc.Status.NodeName) {
			n++
		}
	}
	return n
}

// sigTainted reports whether the node carries the karpenter.sh/disrupted taint.
func sigTainted(ctx context.Context, cl client.Client, node string) bool {
	if node == "" {
		return false
	}
	got := &corev1.Node{}
	if err := cl.Get(ctx, types.NamespacedName{Name: node}, got); err != nil {
		return false
	}
	for _, taint := range got.Spec.Taints {
		if taint.Key == karpv1.DisruptedTaintKey {
			return true
		}
	}
	return false
}
