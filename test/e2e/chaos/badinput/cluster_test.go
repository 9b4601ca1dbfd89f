package badinput_test

import (
	"testing"
	"time"

	"github.com/karp-autoscaler/karp/pkg/test/environment"
	"github.com/karp-autoscaler/karp/test/e2e/chaos/badinput"
)

// TestEveryCaseOnALocalCluster applies every case, as the chaos suite
// does, to a full local cluster (kube-scheduler, kwok) with karp running
// in process: the scheduler marks the bad pods unschedulable, and the pods
// that are bad only in an annotation run on a node karp launches in the
// workload pool, where karp's disruption loop tells them their annotation
// is ignored.
func TestEveryCaseOnALocalCluster(t *testing.T) {
	cluster, cl := environment.StartLocalCluster(t)
	startKarp(t, cluster.Config)
	workloadPool(t, cl, "workload")
	ns := namespace(t, cl, "badinput")

	results := badinput.Run(t.Context(), cl, ns)
	verifyAndCleanUp(t, cl, ns, results, 3*time.Minute)
}
