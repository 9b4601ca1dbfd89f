package framework

import "testing"

func TestReconcileCountsSumsResultsPerController(t *testing.T) {
	raw := []byte(`# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="disruption",result="error"} 2
controller_runtime_reconcile_total{controller="disruption",result="requeue_after"} 17
controller_runtime_reconcile_total{controller="disruption",result="success"} 1
controller_runtime_reconcile_total{controller="nodeclaim.disruption",result="success"} 5
# HELP leader_election_master_status Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.
# TYPE leader_election_master_status gauge
leader_election_master_status{name="karp"} 1
`)
	got, err := reconcileCounts(raw, []string{"disruption", "nodepool.hash"})
	if err != nil {
		t.Fatal(err)
	}
	if got["disruption"] != 20 {
		t.Errorf("disruption reconciles = %v, want 20 (error + requeue_after + success)", got["disruption"])
	}
	if v, ok := got["nodepool.hash"]; !ok || v != 0 {
		t.Errorf("nodepool.hash reconciles = %v (present %v), want 0: a controller that has not reconciled counts 0", v, ok)
	}
	if _, ok := got["nodeclaim.disruption"]; ok {
		t.Errorf("counted nodeclaim.disruption, which was not asked for: %v", got)
	}
	if _, err := reconcileCounts([]byte("not { a metric"), nil); err == nil {
		t.Error("a malformed exposition parsed without error")
	}
}
