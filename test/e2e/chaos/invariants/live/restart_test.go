package live

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/karp-autoscaler/karp/test/e2e/chaos/invariants"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// TestMonitorsAcrossControlPlaneRestarts drifts a pool and, between
// karp's evictions, kills and restarts the API server and then etcd: the
// monitor's watches end with them and resume (or relist), and it must
// still report no violation. Pods evicted while it could not watch are
// reported unobserved, never guessed. On a loaded machine a restart can
// outlast karp's renew deadline: karp then exits, having lost its Lease,
// and is started again as its Deployment would start it.
func TestMonitorsAcrossControlPlaneRestarts(t *testing.T) {
	const name = "inv-restart"
	f, k, original := poolOfThree(t, name)
	cl := f.Client
	ctx := t.Context()
	restarts := k.SuperviseLeaseLoss(t)

	mon, err := invariants.Start(ctx, f.Config, invariants.Options{})
	if err != nil {
		t.Fatal(err)
	}
	drift(t, cl, name)
	for i, component := range []string{"kube-apiserver", "etcd"} {
		framework.Eventually(t, 4*time.Minute, func(context.Context) (bool, string) {
			r := mon.Report()
			seen := r.Evictions + r.Unobserved
			return seen > i, fmt.Sprintf("%d pods evicted or unobserved, waiting for %d before restarting %s", seen, i+1, component)
		})
		if err := f.Cluster.Restart(ctx, component); err != nil {
			t.Fatalf("restarting %s: %v", component, err)
		}
	}
	waitReplaced(t, cl, name, original)
	report := mon.Stop()
	t.Logf("monitor report: %s; karp restarted after losing its Lease: %d times", report.String(), restarts())

	if len(report.Violations) != 0 {
		t.Errorf("a drift within the budget across restarts: %d violations", len(report.Violations))
	}
	if seen := report.Evictions + report.Unobserved; seen < 3 {
		t.Errorf("%d evictions and %d unobserved pods; karp drained three nodes with a pod each", report.Evictions, report.Unobserved)
	}
}
