package provisioning_test

import (
	"testing"
	"time"

	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestSolveTimeBoundDefersWhatItDidNotPlace: a solve that reaches its time
// bound (upstream's is one minute) acts on what it placed so far; the pods
// it had no time for are neither reported unschedulable nor given up on,
// and the next pass places them.
func TestSolveTimeBoundDefersWhatItDidNotPlace(t *testing.T) {
	h := newHarness(t)
	if got := provisioning.DefaultOptions().SolveTimeout; got != time.Minute {
		t.Errorf("default SolveTimeout = %s, want upstream's 1m", got)
	}
	bounded := provisioning.DefaultOptions()
	bounded.SolveTimeout = time.Nanosecond // over before the first pod
	h.provisioner = provisioning.NewProvisioner(h.mgr.GetClient(), h.provider, h.cluster, h.base.Recorder, h.clock, bounded)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	h.pendingPods(test.MakePod("a").Requests("cpu", "1").Obj())
	res := h.schedule()
	if len(res.Created) != 0 {
		t.Fatalf("created %v after the bound expired before any placement", res.Created)
	}
	if len(res.Solve.PodErrors) != 0 {
		t.Errorf("pods the solve had no time for are reported unschedulable: %+v", res.Solve.PodErrors[0].Status)
	}
	if res.Deferred != 1 {
		t.Errorf("deferred = %d, want 1", res.Deferred)
	}
	h.started()
	if res := h.schedule(); len(res.Created) != 1 {
		t.Errorf("next pass created %v, want one NodeClaim", res.Created)
	}
}
