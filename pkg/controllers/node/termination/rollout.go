package termination

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/rollout"
)

// rolloutGate holds back the eviction of a pod that no PodDisruptionBudget
// selects while it would make more of its controller's replicas
// unavailable than the controller's own rollout budget allows (its
// maxUnavailable; pkg/rollout, pkg/scheduling RolloutBudget). The Eviction
// API enforces PDBs; nothing enforces a rollout budget but karp.
//
// Decisions read the manager's cache. A pod the gate let go counts as
// unavailable until the cache shows it terminating or gone, so neither the
// queue's concurrent workers nor the drains of other nodes spend one
// budget twice before the cache catches up.
type rolloutGate struct {
	kubeClient client.Reader

	mu sync.Mutex
	// evicting are the pods the gate let go whose deletion the cache has
	// not shown yet.
	evicting map[types.UID]types.NamespacedName
}

func newRolloutGate(kubeClient client.Reader) *rolloutGate {
	return &rolloutGate{kubeClient: kubeClient, evicting: map[types.UID]types.NamespacedName{}}
}

// admit decides whether the pod may be evicted now. It returns "" when it
// may (call release if the eviction then does not happen), else the
// budget that holds it. A pod the cache does not hold (gone, or too new
// to be cached) is left to the Eviction API, which answers for it.
func (g *rolloutGate) admit(ctx context.Context, req evictionRequest) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.prune(ctx); err != nil {
		return "", err
	}
	pod := &corev1.Pod{}
	if err := g.kubeClient.Get(ctx, req.NamespacedName, pod, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("getting pod: %w", err)
	}
	if pod.UID != req.UID || pod.DeletionTimestamp != nil {
		return "", nil
	}
	if covered, err := rollout.CoveredByPDB(ctx, g.kubeClient, pod); err != nil || covered {
		return "", err
	}
	budget, err := rollout.NewView(g.kubeClient, sets.KeySet(g.evicting)).Budget(ctx, pod)
	if err != nil || budget == nil {
		return "", err
	}
	if !budget.Admits(pod) {
		return budget.String(), nil
	}
	if budget.Available.Has(pod.UID) {
		g.evicting[pod.UID] = req.NamespacedName
	}
	return "", nil
}

// release forgets a pod admit let go whose eviction did not happen.
func (g *rolloutGate) release(uid types.UID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.evicting, uid)
}

// prune forgets the evicting pods the cache shows terminating or gone.
func (g *rolloutGate) prune(ctx context.Context) error {
	for uid, key := range g.evicting {
		pod := &corev1.Pod{}
		err := g.kubeClient.Get(ctx, key, pod, client.UnsafeDisableDeepCopy)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("getting pod: %w", err)
		}
		if err != nil || pod.UID != uid || pod.DeletionTimestamp != nil {
			delete(g.evicting, uid)
		}
	}
	return nil
}
