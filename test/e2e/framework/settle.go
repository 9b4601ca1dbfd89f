package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// Settle is what SettleNodePool waits for.
type Settle struct {
	// Pool is the NodePool whose NodeClaims must settle.
	Pool string
	// Pods reports whether the workload is where it should be, and how
	// it stands (for the failure message).
	Pods func(ctx context.Context) (bool, string)
	// Stable is how long the pool's set of NodeClaims must stay the same.
	Stable time.Duration
	// Timeout bounds the wait; Interval is the time between readings
	// (Eventually's backoff when zero: large pools want a slower pace).
	Timeout, Interval time.Duration
	// Seen, when set, gets the NodeClaims of every reading.
	Seen func(claims []karpv1.NodeClaim)
}

// SettleNodePool waits until no NodeClaim of the pool is being deleted or
// sits on a node tainted karpenter.sh/disrupted, s.Pods holds, and the set
// of the pool's NodeClaims has not changed for s.Stable. It returns when
// that set last changed.
func SettleNodePool(tb testing.TB, cl client.Client, s Settle) time.Time {
	tb.Helper()
	lastChange, lastKey := time.Now(), ""
	next := backoff
	if s.Interval != 0 {
		next = func(time.Duration) time.Duration { return s.Interval }
	}
	poll(tb, s.Timeout, next, func(ctx context.Context) (bool, string) {
		claims := PoolNodeClaims(ctx, cl, s.Pool)
		if s.Seen != nil {
			s.Seen(claims)
		}
		var nodes corev1.NodeList
		if err := cl.List(ctx, &nodes); err != nil {
			return false, err.Error()
		}
		disrupted := map[string]bool{}
		for i := range nodes.Items {
			disrupted[nodes.Items[i].Name] = HasDisruptedTaint(&nodes.Items[i])
		}
		key, busy := "", 0
		for _, nc := range claims {
			key += nc.Name + ","
			if nc.DeletionTimestamp != nil || disrupted[nc.Status.NodeName] {
				busy++
			}
		}
		if key != lastKey {
			lastChange, lastKey = time.Now(), key
		}
		podsOK, pods := s.Pods(ctx)
		stable := time.Since(lastChange)
		return busy == 0 && podsOK && stable >= s.Stable,
			fmt.Sprintf("%d NodeClaims, %d disrupting, %s, unchanged for %s", len(claims), busy, pods, stable.Round(time.Second))
	})
	return lastChange
}
