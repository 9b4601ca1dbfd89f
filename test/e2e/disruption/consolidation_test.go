package disruption

import (
	"context"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// TestNginxDemoConsolidatesWithoutBreakingItsPDB runs nginx-demo (two
// replicas spread over hosts, PDB minAvailable 50%) beside three 2-cpu
// filler pods on their own nodes, removes the filler and waits until karp
// consolidated the pool down to two nodes sized for nginx alone (the
// nodes sized for the filler are deleted or replaced by cheaper ones, so
// nginx's replicas are evicted under the PDB). A watcher
// sampling every 200 ms must never see fewer than one available replica,
// and no nginx pod may be force-deleted. The nodes karp keeps say why.
func TestNginxDemoConsolidatesWithoutBreakingItsPDB(t *testing.T) {
	const name = "e2e-consolidation"
	f, _ := framework.RunPool(t, name, framework.NginxDemoPool(name), framework.FastDisruptionArgs...)
	cl := f.Client
	framework.ConsolidateNginxDemo(t, cl, name)

	var events eventsv1.EventList
	if err := cl.List(t.Context(), &events, client.InNamespace(name)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == "Disrupted" && e.Regarding.Kind == "Pod" {
			t.Errorf("pod %s was force-deleted: %s", e.Regarding.Name, e.Note)
		}
	}
	// The nodes that stay say why.
	framework.Eventually(t, time.Minute, func(ctx context.Context) (bool, string) {
		for _, nc := range framework.PoolNodeClaims(ctx, cl, name) {
			if c := nc.StatusConditions().Get(disruption.ConditionTypeDisruptionBlocked); c != nil && c.Message != "" {
				t.Logf("nodeclaim %s stays: %s: %s", nc.Name, c.Reason, c.Message)
				return true, ""
			}
		}
		return false, "no remaining nodeclaim carries a DisruptionBlocked reason"
	})
}
